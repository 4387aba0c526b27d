"""pi_protocol: the wire and file types of pi-sessiond, declared once.

attrs classes with snake_case fields; :data:`converter` maps them to the
camelCase JSON used on the wire and in Pi's session files. Imports attrs and
cattrs only.
"""

from pi_protocol import errors, methods, params, results
from pi_protocol.compaction import (
    CompactionPreview,
    CompactResult,
    Gate,
    GateAddition,
    NavigateResult,
    RequestPlan,
)
from pi_protocol.content import ContentBlock, ImageContent, TextContent, ThinkingContent, ToolCall
from pi_protocol.converter import StructureError, converter, structure, unstructure
from pi_protocol.entries import (
    CURRENT_SESSION_VERSION,
    ENTRY_TYPES,
    BranchSummaryEntry,
    CompactionEntry,
    CustomEntry,
    CustomMessageEntry,
    FileDetails,
    LabelEntry,
    MessageEntry,
    ModelChangeEntry,
    SessionEntry,
    SessionHeader,
    SessionInfoEntry,
    ThinkingLevelChangeEntry,
)
from pi_protocol.messages import (
    MESSAGE_ROLES,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    CustomMessage,
    Message,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from pi_protocol.session import ContextResult, SessionWarning, TreeDump

__all__ = [
    "CURRENT_SESSION_VERSION",
    "ENTRY_TYPES",
    "MESSAGE_ROLES",
    "AssistantMessage",
    "BashExecutionMessage",
    "BranchSummaryEntry",
    "BranchSummaryMessage",
    "CompactResult",
    "CompactionEntry",
    "CompactionPreview",
    "CompactionSummaryMessage",
    "ContentBlock",
    "ContextResult",
    "Cost",
    "CustomEntry",
    "CustomMessage",
    "CustomMessageEntry",
    "FileDetails",
    "Gate",
    "GateAddition",
    "ImageContent",
    "LabelEntry",
    "Message",
    "MessageEntry",
    "ModelChangeEntry",
    "NavigateResult",
    "RequestPlan",
    "SessionEntry",
    "SessionHeader",
    "SessionInfoEntry",
    "SessionWarning",
    "StructureError",
    "TextContent",
    "ThinkingContent",
    "ThinkingLevelChangeEntry",
    "ToolCall",
    "ToolResultMessage",
    "TreeDump",
    "Usage",
    "UserMessage",
    "converter",
    "errors",
    "methods",
    "params",
    "results",
    "structure",
    "unstructure",
]

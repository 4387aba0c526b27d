"""pi_protocol: the wire and file types of pi-sessiond, declared once.

attrs classes with snake_case fields; :data:`converter` maps them to the
camelCase JSON used on the wire and in Pi's session files. Imports attrs and
cattrs only. The converter loads with the package; the wire modules and their
names load when first used, so reading the method table or answering
``initialize`` does not build every wire class.
"""

import importlib
from typing import TYPE_CHECKING, Any

from pi_protocol import errors
from pi_protocol.converter import StructureError, converter, structure, unstructure

if TYPE_CHECKING:
    from pi_protocol import methods, params, results
    from pi_protocol.compaction import (
        CompactionPreview,
        CompactResult,
        Gate,
        GateAddition,
        NavigateResult,
        RequestPlan,
    )
    from pi_protocol.content import ContentBlock, ImageContent, TextContent, ThinkingContent, ToolCall
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

_NAMES = {
    "pi_protocol.content": ("ContentBlock", "ImageContent", "TextContent", "ThinkingContent", "ToolCall"),
    "pi_protocol.entries": (
        "CURRENT_SESSION_VERSION", "ENTRY_TYPES", "BranchSummaryEntry", "CompactionEntry", "CustomEntry",
        "CustomMessageEntry", "FileDetails", "LabelEntry", "MessageEntry", "ModelChangeEntry", "SessionEntry",
        "SessionHeader", "SessionInfoEntry", "ThinkingLevelChangeEntry"),
    "pi_protocol.messages": (
        "MESSAGE_ROLES", "AssistantMessage", "BashExecutionMessage", "BranchSummaryMessage",
        "CompactionSummaryMessage", "Cost", "CustomMessage", "Message", "ToolResultMessage", "Usage", "UserMessage"),
    "pi_protocol.compaction": (
        "CompactionPreview", "CompactResult", "Gate", "GateAddition", "NavigateResult", "RequestPlan"),
    "pi_protocol.session": ("ContextResult", "SessionWarning", "TreeDump"),
}
_LATER = {
    "methods": "pi_protocol.methods",
    "params": "pi_protocol.params",
    "results": "pi_protocol.results",
    **{name: module for module, names in _NAMES.items() for name in names},
}
"""The names loaded on first use, and their module."""


def __getattr__(name: str) -> Any:
    """A name of :data:`_LATER`, imported on first use (a submodule is itself the value)."""
    module = _LATER.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_protocol' has no attribute {name!r}")
    loaded = importlib.import_module(module)
    value = loaded if module.rsplit(".", 1)[1] == name else getattr(loaded, name)
    globals()[name] = value
    return value


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

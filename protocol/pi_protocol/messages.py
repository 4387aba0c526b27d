"""Message roles: the ones stored in ``message`` entries and the derived ones.

``branchSummary`` and ``compactionSummary`` are never stored as messages; they
are built from ``branch_summary`` / ``compaction`` entries by context building.
Messages of an unknown role stay plain dicts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs

from pi_protocol.base import JsonDict, Raw, extra_field
from pi_protocol.content import ContentBlock


@attrs.define(kw_only=True)
class Cost:
    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    total: float = 0
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class Usage:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = attrs.field(factory=Cost)
    extra: JsonDict = extra_field()


Content = str | list[ContentBlock | JsonDict]
"""Text, or a list of blocks (unknown blocks kept as dicts)."""


@attrs.define(kw_only=True)
class UserMessage:
    role: Literal["user"] = "user"
    content: Content
    timestamp: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class AssistantMessage:
    role: Literal["assistant"] = "assistant"
    content: list[ContentBlock | JsonDict]
    api: str | None = None
    provider: str | None = None
    model: str | None = None
    usage: Usage | None = None
    stop_reason: str | None = None
    error_message: str | None = None
    timestamp: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ToolResultMessage:
    role: Literal["toolResult"] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: list[ContentBlock | JsonDict]
    details: Any = None
    is_error: bool = False
    timestamp: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class BashExecutionMessage:
    role: Literal["bashExecution"] = "bashExecution"
    command: str
    output: str = ""
    exit_code: int | None = None
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | None = None
    timestamp: int | None = None
    exclude_from_context: bool | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CustomMessage:
    role: Literal["custom"] = "custom"
    custom_type: str
    content: Content
    display: bool = True
    details: Any = None
    timestamp: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class BranchSummaryMessage:
    role: Literal["branchSummary"] = "branchSummary"
    summary: str
    from_id: str
    timestamp: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CompactionSummaryMessage:
    role: Literal["compactionSummary"] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int | None = None
    extra: JsonDict = extra_field()


Message = (
    UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
)

RawMessage = Annotated[JsonDict, Raw(Message, "Message")]
"""An LLM message as the JSON object context building returns (any role, unknown ones included)."""

MESSAGE_ROLES: dict[str, type[Any]] = {
    "user": UserMessage,
    "assistant": AssistantMessage,
    "toolResult": ToolResultMessage,
    "bashExecution": BashExecutionMessage,
    "custom": CustomMessage,
    "branchSummary": BranchSummaryMessage,
    "compactionSummary": CompactionSummaryMessage,
}

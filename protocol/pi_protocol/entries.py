"""The session header and every entry type of a Pi session file.

Field order is the order Pi writes the keys, so our lines read like Pi's: most
entries start ``type, id, parentId, timestamp``; ``custom`` and
``custom_message`` put their own fields first. Entries of an unknown type
stay plain dicts.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import attrs

from pi_protocol.base import JsonDict, Raw, extra_field, keep_null
from pi_protocol.content import ImageContent, TextContent
from pi_protocol.messages import Message, Usage

CURRENT_SESSION_VERSION = 3


@attrs.define(kw_only=True)
class SessionHeader:
    type: Literal["session"] = "session"
    version: int | None = None
    id: str
    timestamp: str
    cwd: str = ""
    parent_session: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class FileDetails:
    """``details`` of a generated compaction or branch summary."""

    read_files: list[str] = attrs.field(factory=list)
    modified_files: list[str] = attrs.field(factory=list)
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class MessageEntry:
    type: Literal["message"] = "message"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    message: Message | JsonDict
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ThinkingLevelChangeEntry:
    type: Literal["thinking_level_change"] = "thinking_level_change"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    thinking_level: str
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ModelChangeEntry:
    type: Literal["model_change"] = "model_change"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    provider: str
    model_id: str
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CompactionEntry:
    type: Literal["compaction"] = "compaction"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    system_message: JsonDict | None = None  # Pi 1.6.0's checkpoint: the replayed system message
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class BranchSummaryEntry:
    type: Literal["branch_summary"] = "branch_summary"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    from_id: str
    summary: str
    details: Any = None
    usage: Usage | None = None
    from_hook: bool | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CustomEntry:
    type: Literal["custom"] = "custom"
    custom_type: str
    data: Any = None
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CustomMessageEntry:
    type: Literal["custom_message"] = "custom_message"
    custom_type: str
    content: str | list[TextContent | ImageContent | JsonDict]
    display: bool = True
    details: Any = None
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class LabelEntry:
    type: Literal["label"] = "label"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    target_id: str
    label: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class SessionInfoEntry:
    type: Literal["session_info"] = "session_info"
    id: str = ""
    parent_id: str | None = keep_null(default=None)
    timestamp: str = ""
    name: str
    extra: JsonDict = extra_field()


SessionEntry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | CompactionEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
)

RawEntry = Annotated[JsonDict, Raw(SessionEntry, "SessionEntry")]
"""A session entry as the JSON object the store holds (any type, unknown ones included)."""

RawHeader = Annotated[JsonDict, Raw(SessionHeader, "SessionHeader")]
"""A session header as the JSON object the file holds."""

ENTRY_TYPES: dict[str, type[Any]] = {
    "message": MessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "compaction": CompactionEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
}

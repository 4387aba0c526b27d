"""What each session entry means: the one table of entry kinds and message roles.

Every rule that depends on an entry's ``type`` (or, for ``message`` entries, on
its message's ``role``) is read from :data:`ENTRY_KINDS` / :data:`ROLES`; the
projection (``projection.py``), the live context, the tree previews and the
compaction code look here instead of testing type strings themselves. A new
entry type is one :class:`EntryKind` row here (plus its wire class in
``pi_protocol/entries.py`` and, if the generator should emit it, a line in
``examples/``).

Facts are Pi 1.6.0's (``sessionEntryToContextMessages``, ``projectContextEntry``,
``findProjectedCutPoint``, ``estimateTokens``; differential-tested in
``tests/parity/``):

* ``EntryKind.messages`` is what the entry contributes to the context before
  edits (``compaction`` rows: the newest compaction only; the projection gives
  older ones nothing). Null content is normalized as 1.6.0 does.
* ``EntryKind.metadata``: context-invisible by nature; the cut's back-scan
  swallows it (``label``, ``model_change``, ``usage``, ``context_edit``…).
* ``RoleKind.cut_point`` / ``turn_start`` are 1.6.0's projected-cut rules;
  ``editable`` says whether a ``context_edit`` replaces that role's content;
  ``tokens`` names the ``estimateTokens`` rule (``compaction/tokens.py``
  implements each name); ``text`` renders a one-line tree preview.

Unknown types and roles get :data:`UNKNOWN_KIND` / :data:`UNKNOWN_ROLE`: no
context, metadata, empty preview (Pi ignores what it does not know).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.tree import timestamp_ms

TokenRule = Literal["user", "assistant", "blocks", "bash", "summary", "system", "none"]


def js_time(iso: str) -> int | float | None:
    """``new Date(iso).getTime()`` as JSON would print it (NaN -> null)."""
    ms = timestamp_ms(iso)
    if math.isnan(ms):
        return None
    return int(ms) if ms.is_integer() else ms


def content_text(content: Any) -> str:
    """A message's text: the string, or its text blocks joined with ``""``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and "text" in b)


# ---------------------------------------------------------------- message roles
@attrs.frozen
class RoleKind:
    """What a message of one ``role`` means (see the module docstring)."""

    role: str
    cut_point: bool
    turn_start: bool
    editable: bool
    tokens: TokenRule
    text: Callable[[JsonDict], str]


def _content_preview(message: JsonDict) -> str:
    return content_text(message.get("content"))


def _assistant_preview(message: JsonDict) -> str:
    content = message.get("content")
    if not isinstance(content, list):
        return content_text(content)
    parts = [content_text([b]) or _tool_call(b) for b in content if isinstance(b, dict)]
    return " ".join(p for p in parts if p)


def _tool_call(block: JsonDict) -> str:
    return f"[{block.get('name')}]" if block.get("type") == "toolCall" else ""


def _summary_preview(message: JsonDict) -> str:
    return str(message.get("summary") or "")


def _bash_preview(message: JsonDict) -> str:
    return f"$ {message.get('command') or ''}"


ROLES: Final[Mapping[str, RoleKind]] = {
    r.role: r
    for r in (
        RoleKind("user", cut_point=True, turn_start=True, editable=True, tokens="user", text=_content_preview),
        RoleKind("assistant", True, False, True, "assistant", _assistant_preview),
        RoleKind("toolResult", False, False, True, "blocks", _content_preview),
        RoleKind("custom", True, True, True, "blocks", _content_preview),
        RoleKind("bashExecution", True, True, False, "bash", _bash_preview),
        RoleKind("branchSummary", True, True, False, "summary", _summary_preview),
        RoleKind("compactionSummary", True, True, False, "summary", _summary_preview),
        RoleKind("system", False, False, False, "system", _content_preview),
    )
}
UNKNOWN_ROLE: Final = RoleKind("?", False, False, False, "none", _content_preview)
CUT_POINT_ROLES: Final = frozenset(r.role for r in ROLES.values() if r.cut_point)
EDITABLE_ROLES: Final = frozenset(r.role for r in ROLES.values() if r.editable)


def role_kind(role: Any) -> RoleKind:
    """The row of ``role`` (:data:`UNKNOWN_ROLE` when unknown)."""
    return ROLES.get(role, UNKNOWN_ROLE) if isinstance(role, str) else UNKNOWN_ROLE


# ----------------------------------------------------------------- entry types
@attrs.frozen
class EntryKind:
    """What an entry of one ``type`` means (see the module docstring)."""

    type: str
    messages: Callable[[Entry], list[JsonDict]]
    metadata: bool
    text: Callable[[Entry], str]


def _none(entry: Entry) -> list[JsonDict]:
    return []


_NULL_CONTENT_ROLES: Final = frozenset({"system", "user", "assistant", "toolResult"})


def _message(entry: Entry) -> list[JsonDict]:
    message = entry.data.get("message")
    if not isinstance(message, dict):
        return []
    role = message.get("role")
    if message.get("content") is None and role in _NULL_CONTENT_ROLES:
        return [{**message, "content": "" if role == "system" else []}]
    return [message]


def _custom_message(entry: Entry) -> list[JsonDict]:
    data = entry.data
    content = data.get("content")
    return [
        _defined(
            role="custom",
            customType=data.get("customType"),
            content=[] if content is None else content,
            display=data.get("display"),
            details=data.get("details"),
            timestamp=js_time(entry.timestamp),
        )
    ]


def _branch_summary(entry: Entry) -> list[JsonDict]:
    data = entry.data
    if not data.get("summary"):
        return []
    message = _defined(
        role="branchSummary", summary=data.get("summary"), fromId=data.get("fromId"), timestamp=js_time(entry.timestamp)
    )
    return [message]


def compaction_message(entry: Entry) -> JsonDict:
    """The ``compactionSummary`` message of a compaction entry."""
    data = entry.data
    return _defined(
        role="compactionSummary",
        summary=data.get("summary"),
        tokensBefore=data.get("tokensBefore"),
        timestamp=js_time(entry.timestamp),
    )


def _compaction(entry: Entry) -> list[JsonDict]:
    checkpoint = entry.data.get("systemMessage")
    summary = compaction_message(entry)
    return [checkpoint, summary] if checkpoint else [summary]


def _defined(**fields: Any) -> JsonDict:
    # JSON.stringify drops undefined members; "timestamp" stays (NaN prints null).
    return {k: v for k, v in fields.items() if v is not None or k == "timestamp"}


def _field(name: str) -> Callable[[Entry], str]:
    return lambda entry: str(entry.data.get(name) or "")


def _message_text(entry: Entry) -> str:
    message = entry.message or {}
    return role_kind(message.get("role")).text(message)


def _label_text(entry: Entry) -> str:
    return f"{entry.data.get('targetId')}: {entry.data.get('label') or '(cleared)'}"


def _edit_text(entry: Entry) -> str:
    replacement = entry.data.get("replacement")
    what = content_text(replacement.get("content")) if isinstance(replacement, dict) else "(omitted)"
    return f"{entry.data.get('targetId')}: {what}"


def _usage_text(entry: Entry) -> str:
    return f"{entry.data.get('kind')} {entry.data.get('provider')}/{entry.data.get('model')}"


ENTRY_KINDS: Final[Mapping[str, EntryKind]] = {
    k.type: k
    for k in (
        EntryKind("message", _message, metadata=False, text=_message_text),
        EntryKind("custom_message", _custom_message, False, lambda e: content_text(e.data.get("content"))),
        EntryKind("branch_summary", _branch_summary, False, _field("summary")),
        EntryKind("compaction", _compaction, False, _field("summary")),
        EntryKind("context_edit", _none, True, _edit_text),
        EntryKind("usage", _none, True, _usage_text),
        EntryKind("label", _none, True, _label_text),
        EntryKind("model_change", _none, True, lambda e: f"{e.data.get('provider')}/{e.data.get('modelId')}"),
        EntryKind("thinking_level_change", _none, True, _field("thinkingLevel")),
        EntryKind("session_info", _none, True, _field("name")),
        EntryKind("custom", _none, True, _field("customType")),
    )
}
UNKNOWN_KIND: Final = EntryKind("?", _none, True, lambda e: "")


def entry_kind(entry: Entry) -> EntryKind:
    """The row of ``entry.type`` (:data:`UNKNOWN_KIND` when unknown)."""
    return ENTRY_KINDS.get(entry.type, UNKNOWN_KIND)


def entry_messages(entry: Entry) -> list[JsonDict]:
    """Pi 1.6.0's ``sessionEntryToContextMessages``: the entry's context messages before edits."""
    return entry_kind(entry).messages(entry)


def entry_text(entry: Entry) -> str:
    """The entry's preview text (not yet flattened or shortened)."""
    return entry_kind(entry).text(entry)


def is_editable_target(entry: Entry) -> bool:
    """Whether Pi 1.6.0's ``appendContextEdit`` accepts ``entry`` as a target."""
    if entry.type == "custom_message":
        return True
    return entry.type == "message" and entry.role in EDITABLE_ROLES and entry.role != "custom"

"""The LLM context of a leaf, exactly as Pi 0.73.1's ``buildSessionContext``.

Rules (reference §3): the path root -> leaf is scanned for the thinking level,
the model (``model_change`` or an assistant message, the later wins) and the
latest ``compaction``. Without a compaction every path entry contributes its
message; with one, the summary comes first, then the entries before it from
its ``firstKeptEntryId`` on (nothing if that id is not before it), then
everything after it. ``custom_message`` and non-empty ``branch_summary``
entries become ``custom`` / ``branchSummary`` messages; other entries add
nothing. Messages are Pi's JSON objects; stored messages are shared, not copied.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.tree import timestamp_ms

JsonDict = dict[str, Any]


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Final = _Unset()


@attrs.frozen
class SessionContext:
    """What the model sees from one leaf."""

    messages: Sequence[JsonDict]
    thinking_level: Any = "off"
    model: JsonDict | None = None

    def to_json(self) -> JsonDict:
        """The ``pi/getContext`` shape without ``tokens``."""
        return {"messages": list(self.messages), "thinkingLevel": self.thinking_level, "model": self.model}


EMPTY_CONTEXT: Final = SessionContext([])


def js_time(iso: str) -> int | float | None:
    """``new Date(iso).getTime()`` as JSON would print it (NaN -> null)."""
    ms = timestamp_ms(iso)
    if math.isnan(ms):
        return None
    return int(ms) if ms.is_integer() else ms


def entry_to_message(entry: Entry) -> JsonDict | None:
    """The context message an entry contributes (compactions are handled apart)."""
    if entry.type == "message":
        return entry.data.get("message")
    data = entry.data
    if entry.type == "custom_message":
        return _defined(
            role="custom",
            customType=data.get("customType"),
            content=data.get("content"),
            display=data.get("display"),
            details=data.get("details"),
            timestamp=js_time(entry.timestamp),
        )
    if entry.type == "branch_summary" and data.get("summary"):
        return _defined(
            role="branchSummary",
            summary=data.get("summary"),
            fromId=data.get("fromId"),
            timestamp=js_time(entry.timestamp),
        )
    return None


def compaction_message(entry: Entry) -> JsonDict:
    """The ``compactionSummary`` message of a compaction entry."""
    data = entry.data
    return _defined(
        role="compactionSummary",
        summary=data.get("summary"),
        tokensBefore=data.get("tokensBefore"),
        timestamp=js_time(entry.timestamp),
    )


def _defined(**fields: Any) -> JsonDict:
    # JSON.stringify drops undefined members; "timestamp" stays (NaN prints null).
    return {k: v for k, v in fields.items() if v is not None or k == "timestamp"}


def resolve_leaf(entries: Sequence[Entry], leaf_id: str | _Unset | None, by_id: Mapping[str, Entry]) -> Entry | None:
    """Pi's leaf choice: null -> none; unknown or unset -> the last entry."""
    if leaf_id is None:
        return None
    leaf = by_id.get(leaf_id) if isinstance(leaf_id, str) and leaf_id else None
    if leaf is None and entries:
        leaf = entries[-1]
    return leaf


def walk_path(leaf: Entry | None, by_id: Mapping[str, Entry]) -> list[Entry]:
    """Root -> leaf; stops at a missing parent or a repeated entry."""
    path: list[Entry] = []
    seen: set[str] = set()
    current = leaf
    while current is not None and current.id not in seen:
        seen.add(current.id)
        path.append(current)
        current = by_id.get(current.parent_id) if current.parent_id else None
    path.reverse()
    return path


def build_session_context(
    entries: Sequence[Entry],
    leaf_id: str | _Unset | None = UNSET,
    by_id: Mapping[str, Entry] | None = None,
) -> SessionContext:
    """Pi's ``buildSessionContext(entries, leafId, byId)``."""
    if by_id is None:
        by_id = {e.id: e for e in entries}
    leaf = resolve_leaf(entries, leaf_id, by_id)
    if leaf is None:
        return EMPTY_CONTEXT
    return context_from_path(walk_path(leaf, by_id))


def context_from_path(path: Sequence[Entry]) -> SessionContext:
    """The context of a root -> leaf path."""
    thinking: Any = "off"
    model: JsonDict | None = None
    compaction_index = -1
    for i, entry in enumerate(path):
        kind = entry.type
        if kind == "thinking_level_change":
            thinking = entry.data.get("thinkingLevel")
        elif kind == "model_change":
            model = _defined(provider=entry.data.get("provider"), modelId=entry.data.get("modelId"))
        elif kind == "message" and entry.role == "assistant":
            msg = entry.data["message"]
            model = _defined(provider=msg.get("provider"), modelId=msg.get("model"))
        elif kind == "compaction":
            compaction_index = i
    return SessionContext(_messages(path, compaction_index), thinking, model)


def _messages(path: Sequence[Entry], compaction_index: int) -> list[JsonDict]:
    if compaction_index < 0:
        return _collect(path)
    compaction = path[compaction_index]
    first_kept = compaction.data.get("firstKeptEntryId")
    compaction_index = next(i for i, e in enumerate(path) if e.type == "compaction" and e.id == compaction.id)
    start = compaction_index
    for i in range(compaction_index):
        if path[i].id == first_kept:
            start = i
            break
    kept = _collect(path[start:compaction_index])
    return [compaction_message(compaction), *kept, *_collect(path[compaction_index + 1 :])]


def _collect(entries: Sequence[Entry]) -> list[JsonDict]:
    out: list[JsonDict] = []
    for entry in entries:
        msg = entry_to_message(entry)
        if msg is not None:
            out.append(msg)
    return out

"""The LLM context of a leaf, exactly as Pi 1.6.0's ``buildSessionContext``.

The context is the projection's messages, thinking level and model
(``projection.py`` holds every rule: compaction, kept range, checkpoint,
``context_edit``\\ s, older compactions contributing nothing). This module only
resolves the leaf and walks the path, as Pi does: ``null`` -> no leaf, an
unknown or unset id -> the last entry; the walk stops at a missing parent or a
repeated entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import js_time
from pi_sessiond.store.projection import Projection, project_path

__all__ = ["EMPTY_CONTEXT", "UNSET", "SessionContext", "build_session_context", "context_from_path", "js_time"]


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

    @classmethod
    def of(cls, projection: Projection) -> SessionContext:
        """The context of a projection."""
        return cls(projection.messages, projection.thinking_level, projection.model)


EMPTY_CONTEXT: Final = SessionContext([])


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
    return SessionContext.of(project_path(path))

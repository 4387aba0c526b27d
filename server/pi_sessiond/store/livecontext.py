"""The current leaf's context, maintained incrementally.

Appending an entry under the leaf extends the context in O(1) instead of
rebuilding the whole path (Pi rebuilds, ~0.5 s on a 100k-entry session). Any
other change (leaf moved, a compaction appended) drops the cache and the next
read rebuilds it with :func:`context_from_path`, so results always equal a
fresh ``buildSessionContext``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, overload

from pi_sessiond.store.context import SessionContext, context_from_path, entry_to_message
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.files import gc_paused
from pi_sessiond.store.tree import SessionTree

_STALE = object()


class MessagesView(Sequence[dict[str, Any]]):
    """The first ``count`` items of a list that only grows at the end."""

    __slots__ = ("_count", "_items")

    def __init__(self, items: list[dict[str, Any]], count: int) -> None:
        self._items = items
        self._count = count

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return self._items[: self._count][index]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError(index)
        return self._items[index]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        items = self._items
        return (items[i] for i in range(self._count))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]


class LiveContext:
    """Context of ``tree.leaf_id``, kept in step with appends."""

    def __init__(self, tree: SessionTree) -> None:
        self._tree = tree
        self._leaf: object = _STALE
        self._messages: list[dict[str, Any]] = []
        self._thinking: Any = "off"
        self._model: dict[str, Any] | None = None

    def get(self) -> SessionContext:
        """The context of the current leaf (a fresh list each call)."""
        if self._leaf is _STALE or self._leaf != self._tree.leaf_id:
            with gc_paused():
                built = context_from_path(self._tree.path())
            self._messages = list(built.messages)  # a new list: old views keep theirs
            self._thinking, self._model = built.thinking_level, built.model
            self._leaf = self._tree.leaf_id
        # The live list only ever grows while this cache lives, so a prefix view
        # of it is a stable snapshot: O(1) instead of copying the whole context.
        return SessionContext(MessagesView(self._messages, len(self._messages)), self._thinking, self._model)

    def on_append(self, entry: Entry) -> None:
        """``entry`` was just appended under the previous leaf."""
        if self._leaf is _STALE or entry.parent_id != self._leaf or entry.type == "compaction":
            self._leaf = _STALE
            return
        self._leaf = entry.id
        if entry.type == "thinking_level_change":
            self._thinking = entry.data.get("thinkingLevel")
            return
        if entry.type == "model_change":
            self._model = _model(entry.data.get("provider"), entry.data.get("modelId"))
            return
        message = entry_to_message(entry)
        if message is None:
            return
        self._messages.append(message)
        if entry.type == "message" and message.get("role") == "assistant":
            self._model = _model(message.get("provider"), message.get("model"))


def _model(provider: Any, model_id: Any) -> dict[str, Any]:
    return {k: v for k, v in (("provider", provider), ("modelId", model_id)) if v is not None}

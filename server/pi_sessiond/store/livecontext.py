"""The current leaf's projection, maintained incrementally.

Appending an entry under the leaf extends the projection without rebuilding
the path (Pi rebuilds, ~0.5 s on a 100k-entry session):

* an ordinary entry adds its projected messages at the end (O(1));
* a ``context_edit`` whose target is a current context entry re-projects that
  one entry and splices its messages in place (the latest edit per target
  wins, as in the projection): no path walk, no re-projection of the rest;
  one whose target is not selected changes nothing but is remembered, in case
  its target is appended later;
* anything else (leaf moved, a compaction appended) drops the cache and the
  next read rebuilds it with :func:`~pi_sessiond.store.projection.project_path`.

The leaf's path (root -> leaf) is kept the same way: extended when an entry is
appended under the leaf, walked again after the leaf moved elsewhere.

So results always equal a fresh ``buildSessionContext``. A returned context is
a snapshot: the message list it views is never changed afterwards (an in-place
edit first copies a list that a snapshot may be viewing: one pointer copy per
edit, no re-projection).

Every in-place re-projection is recorded in the current :class:`ProjectionLog`
(a rebuild starts a new one), which :meth:`LiveContext.projection` snapshots
hand to consumers (compaction's preparation index folds in only those and the
appended entries).
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Sequence
from typing import Any, overload

from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.files import gc_paused
from pi_sessiond.store.projection import (
    ProjectedEntry,
    Projection,
    ProjectionLog,
    apply_settings,
    latest_edits,
    project_entry,
    project_path,
)
from pi_sessiond.store.tree import SessionTree

_STALE = object()

ENTRY_BYTES = 1024
"""A session line's typical size, to weigh a projection rebuild for :func:`~pi_sessiond.store.files.gc_paused`."""


class MessagesView(Sequence[dict[str, Any]]):
    """The first ``count`` items of a list that only grows at the end."""

    __slots__ = ("__weakref__", "_count", "_items")

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
    """Projection of ``tree.leaf_id``, kept in step with appends."""

    def __init__(self, tree: SessionTree) -> None:
        self._tree = tree
        self._leaf: object = _STALE
        self._entries: list[ProjectedEntry] = []
        self._slot: dict[str, int] = {}  # context entry id -> index in _entries
        self._edits: dict[str, Entry] = {}  # target id -> latest edit among the context entries
        self._messages: list[dict[str, Any]] = []  # the flattening of _entries[*].messages
        self._starts: list[int] = []  # where each entry's messages start, before _shifts
        self._shifts: list[tuple[int, int]] = []  # (first entry index, delta) not yet folded into _starts
        self._views: list[weakref.ref[MessagesView]] = []  # snapshots of _messages (dead ones pruned)
        self._thinking: Any = "off"
        self._model: dict[str, Any] | None = None
        self._log = ProjectionLog()
        self._path: list[Entry] = []  # root -> _path_leaf, extended on append like the projection
        self._path_leaf: object = _STALE

    def path(self) -> list[Entry]:
        """Root -> ``tree.leaf_id`` (a new list; O(path) only after the leaf moved elsewhere)."""
        leaf = self._tree.leaf_id
        if self._path_leaf is _STALE or self._path_leaf != leaf:
            self._path = self._tree.path()
            self._path_leaf = leaf
        return list(self._path)

    def get(self) -> SessionContext:
        """The context of the current leaf (a snapshot; O(1) unless an edit was applied)."""
        if self._leaf is _STALE or self._leaf != self._tree.leaf_id:
            self._rebuild()
        # Appends only grow _messages and an edit copies it while a view lives, so a view is a snapshot.
        view = MessagesView(self._messages, len(self._messages))
        if len(self._views) >= 32:
            self._views = [r for r in self._views if r() is not None]
        self._views.append(weakref.ref(view))
        return SessionContext(view, self._thinking, self._model)

    def projected_entries(self) -> list[ProjectedEntry]:
        """The current leaf's projection entries (a new list)."""
        if self._leaf is _STALE or self._leaf != self._tree.leaf_id:
            self._rebuild()
        return list(self._entries)

    def projection(self) -> Projection:
        """A snapshot of the current leaf's projection, with its log (see ``ProjectionLog``)."""
        if self._leaf is _STALE or self._leaf != self._tree.leaf_id:
            self._rebuild()
        return Projection(list(self._entries), self._thinking, self._model,
                          log=self._log, log_length=len(self._log.replaced))

    def _rebuild(self) -> None:
        path = self._tree.path_view()
        with gc_paused(len(path) * ENTRY_BYTES):  # the path's length bounds the context's
            projection = project_path(path)  # makes only the context's entries
        self._entries = list(projection.entries)
        self._slot = {p.entry.id: i for i, p in enumerate(self._entries)}
        self._edits = latest_edits([p.entry for p in self._entries])
        self._messages = []  # a new list: old views keep theirs
        self._starts = []
        for projected in self._entries:
            self._starts.append(len(self._messages))
            self._messages.extend(projected.messages)
        self._shifts = []
        self._views = []
        self._log = ProjectionLog()
        self._thinking, self._model = projection.thinking_level, projection.model
        self._leaf = self._tree.leaf_id

    def on_append(self, entry: Entry) -> None:
        """``entry`` was just appended under the previous leaf."""
        if self._path_leaf is not _STALE and entry.parent_id == self._path_leaf:
            self._path.append(entry)
            self._path_leaf = entry.id
        else:
            self._path_leaf = _STALE
        if self._leaf is _STALE or entry.parent_id != self._leaf or entry.type == "compaction":
            self._leaf = _STALE
            return
        self._leaf = entry.id
        self._thinking, self._model = apply_settings(entry, self._thinking, self._model)
        projected = ProjectedEntry(entry, project_entry(entry, self._edits.get(entry.id)), self._edits.get(entry.id))
        self._slot[entry.id] = len(self._entries)
        self._starts.append(len(self._messages) - self._shift_at(len(self._entries)))
        self._entries.append(projected)
        self._messages.extend(projected.messages)
        if entry.type == "context_edit":
            self._apply_edit(entry)

    def _apply_edit(self, edit: Entry) -> None:
        target = edit.data.get("targetId")
        if not isinstance(target, str):
            return
        self._edits[target] = edit
        index = self._slot.get(target)
        if index is None:
            return
        old = self._entries[index]
        if old.entry.type == "compaction" and index > 0:
            self._entries[index] = ProjectedEntry(old.entry, [], edit)
            self._log.replaced.append(index)
            return
        new = ProjectedEntry(old.entry, project_entry(old.entry, edit), edit)
        self._entries[index] = new
        self._log.replaced.append(index)
        if any(r() is not None for r in self._views):  # a snapshot still views this list: leave it
            self._messages = list(self._messages)
        self._views = []
        start = self._starts[index] + self._shift_at(index)
        self._messages[start : start + len(old.messages)] = new.messages
        delta = len(new.messages) - len(old.messages)
        if delta:
            self._shifts.append((index + 1, delta))
            if len(self._shifts) > 64:
                self._fold_shifts()

    def _shift_at(self, index: int) -> int:
        return sum(delta for first, delta in self._shifts if first <= index)

    def _fold_shifts(self) -> None:
        # Entries before the first shifted one keep their starts: only the tail is renumbered,
        # so edits near the leaf (the usual case) cost O(entries after the edit), not O(context).
        first = min(index for index, _ in self._shifts)
        position = self._starts[first - 1] + len(self._entries[first - 1].messages) if first > 0 else 0
        for i in range(first, len(self._entries)):
            self._starts[i] = position
            position += len(self._entries[i].messages)
        self._shifts = []

"""The entries of a session in file order, held as parallel columns.

Opening a 100k-entry file must not make a Python object per entry
(``scan.py``): an :class:`EntryTable` keeps, per entry, its id, parent id and
type in plain lists (filled by C-speed operations) and makes the
:class:`~pi_sessiond.store.entry.Entry` only when someone asks for it
(``table[i]``, iteration, ``by_id``). Invariants:

- ``ids``, ``parents``, ``types`` and ``_objs`` have one item per entry, in
  file order; ``_objs[i]`` is the entry once made (or given), else ``None``,
  and a made entry is kept, so ``table[i] is table[i]``.
- An entry not yet made is a line of the file its maker (``scan._Maker``) can
  read; its id, parent and type are already in the columns, and the made entry
  carries exactly those (the maker takes them from the columns).
- ``id_positions`` maps an id to the position of its *last* entry (a later duplicate
  wins, as in Pi); built on first use.
- A :class:`PathView` is a root -> leaf path as positions: its ``types`` and
  ``ids`` need no entry to be made, so a walk over 100k entries (thinking
  level, the newest compaction) makes only the entries it stops at.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator, Mapping, Sequence
from itertools import chain, compress, islice, repeat
from operator import ne
from typing import Protocol, overload

from pi_sessiond.store.entry import Entry

_BATCH = 4096  # deferred entries made at once when iterating


class Maker(Protocol):
    """Makes the entries at positions whose objects were not given (``scan._Maker``)."""

    def __call__(self, position: int, /) -> Entry: ...

    def fill(self, objs: list[Entry | None], first: int, stop: int) -> None:
        """Set ``objs[i]`` for every ``None`` among ``first`` .. ``stop - 1``."""


class EntryTable(Sequence[Entry]):
    """All entries of one session in file order (see the module docstring)."""

    __slots__ = ("_given", "_index", "_make", "_objs", "_run_starts", "ids", "parents", "types")

    def __init__(self, make: Maker | None = None) -> None:
        self.ids: list[str] = []
        self.parents: list[str | None] = []
        self.types: list[str] = []
        self._objs: list[Entry | None] = []
        self._make = make
        self._index: dict[str, int] | None = None
        self._run_starts: list[int] | None = None
        self._given: list[int] = []  # positions of the entries given made (append), in file order

    @classmethod
    def of(cls, entries: Sequence[Entry]) -> EntryTable:
        """A table of entries that are all made already."""
        table = cls()
        table.ids = [e.id for e in entries]
        table.parents = [e.parent_id for e in entries]
        table.types = [e.type for e in entries]
        table._objs = list(entries)
        table._given = list(range(len(entries)))
        return table

    # ------------------------------------------------------------ building
    def bind(self, make: Maker) -> None:
        """Set the maker of the entries added by :meth:`extend_deferred`."""
        self._make = make

    def append(self, entry: Entry) -> None:
        """Add a made entry at the end."""
        position = len(self.ids)
        if self._index is not None:
            if entry.id in self._index or not entry.id:  # a duplicate moves its id: runs may change
                self._run_starts = None
            self._index[entry.id] = position
            if self._run_starts is not None:
                parent = entry.parent_id
                if not parent or self._index.get(parent) != position - 1:
                    self._run_starts.append(position)
        else:
            self._run_starts = None
        self.ids.append(entry.id)
        self.parents.append(entry.parent_id)
        self.types.append(entry.type)
        self._objs.append(entry)
        self._given.append(position)

    def extend_deferred(self, ids: list[str], parents: list[str | None], kind: str) -> None:
        """Add entries not made yet, all of type ``kind`` (their maker reads them when asked)."""
        self.ids += ids
        self.parents += parents
        self.types += repeat(kind, len(ids))
        self._objs += repeat(None, len(ids))
        self._index = self._run_starts = None

    # ------------------------------------------------------------- reading
    @property
    def id_positions(self) -> dict[str, int]:
        """Id -> position of its last entry."""
        if self._index is None:
            self._index = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self._index

    def given(self) -> list[Entry]:
        """The entries that were added made (not deferred), in file order; makes none."""
        objs = self._objs
        return [entry for entry in map(objs.__getitem__, self._given) if entry is not None]

    def shed(self) -> None:
        """Drop what the source lines rebuild: unchanged entries made from them are made again when asked
        (the same fields, a new object), the others only lose their parsed bodies."""
        given = set(self._given)
        objs = self._objs
        for i, entry in enumerate(objs):
            if entry is not None and entry.shed() and self._make is not None and i not in given:
                objs[i] = None

    def count_made(self) -> int:
        """How many entries are made (a test's measure of laziness)."""
        return len(self._objs) - self._objs.count(None)

    def __len__(self) -> int:
        return len(self.ids)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(len(self.ids)))]
        if index < 0:
            index += len(self.ids)
        if not 0 <= index < len(self.ids):
            raise IndexError(index)
        return self._at(index)

    def _at(self, i: int) -> Entry:
        entry = self._objs[i]
        if entry is None:
            assert self._make is not None, "a deferred entry without a maker"
            entry = self._objs[i] = self._make(i)
        return entry

    def at_positions(self, positions: Sequence[int]) -> list[Entry]:
        """The entries at ``positions``; a run of consecutive positions is made in bulk."""
        if self._make is not None and positions and positions[-1] - positions[0] + 1 == len(positions):
            self._make.fill(self._objs, positions[0], positions[-1] + 1)
        return [self._at(i) for i in positions]

    def __iter__(self) -> Iterator[Entry]:
        objs, i = self._objs, 0
        while i < len(objs):
            entry = objs[i]
            if entry is None:  # make the deferred ones in bulk, a batch at a time
                assert self._make is not None, "a deferred entry without a maker"
                self._make.fill(objs, i, min(i + _BATCH, len(objs)))
                entry = objs[i]
                assert entry is not None
            yield entry
            i += 1

    def __eq__(self, other: object) -> bool:
        if isinstance(other, EntryTable | list | tuple):
            return len(self) == len(other) and all(a is b or a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def get(self, entry_id: str | None) -> Entry | None:
        """The (last) entry with ``entry_id``, or ``None``."""
        i = self.id_positions.get(entry_id) if entry_id is not None else None
        return self._at(i) if i is not None else None

    def path_positions(self, entry_id: str | None) -> list[int]:
        """Positions from the root down to ``entry_id``; the walk up stops at a missing parent or a repeat.

        Runs of entries each the child of the one before (how Pi writes a branch)
        are stepped over whole: the walk costs one step per run, not per entry.
        """
        index, parents = self.id_positions, self.parents
        i = index.get(entry_id) if entry_id is not None else None
        starts = self._starts()
        runs: list[range] = []
        total, limit = 0, len(parents)
        while i is not None:
            first = starts[bisect_right(starts, i) - 1]
            runs.append(range(first, i + 1))
            total += i + 1 - first
            if total > limit:  # a path longer than the table: a parent cycle
                return self._path_with_cycle(runs[0][-1])
            parent = parents[first]
            i = index.get(parent) if parent else None
        runs.reverse()
        return list(chain.from_iterable(runs))

    def _starts(self) -> list[int]:
        """Where the runs start: the positions whose parent is not the entry right before them."""
        if self._run_starts is None:
            ids, parents, index, count = self.ids, self.parents, self.id_positions, len(self.ids)
            if len(index) == count and "" not in index:  # unique ids: "the one before" is a string compare
                self._run_starts = [0, *compress(range(1, count), map(ne, islice(parents, 1, None), ids))]
            else:
                parent_at = [index.get(p) if p else None for p in parents]
                self._run_starts = list(compress(range(count), map(ne, parent_at, range(-1, count - 1))))
        return self._run_starts

    def _path_with_cycle(self, start: int) -> list[int]:
        index, parents = self.id_positions, self.parents
        up: list[int] = []
        seen: set[int] = set()
        i: int | None = start
        while i is not None and i not in seen:
            seen.add(i)
            up.append(i)
            parent = parents[i]
            i = index.get(parent) if parent else None
        up.reverse()
        return up


class EntryMap(Mapping[str, Entry]):
    """``by_id`` of a table: id -> its last entry, made on lookup."""

    __slots__ = ("_table",)

    def __init__(self, table: EntryTable) -> None:
        self._table = table

    def __getitem__(self, entry_id: str) -> Entry:
        return self._table._at(self._table.id_positions[entry_id])

    def get(self, entry_id: str, default: Entry | None = None) -> Entry | None:  # type: ignore[override]
        i = self._table.id_positions.get(entry_id)
        return self._table._at(i) if i is not None else default

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._table.id_positions

    def __iter__(self) -> Iterator[str]:
        return iter(self._table.id_positions)

    def __len__(self) -> int:
        return len(self._table.id_positions)


class PathView(Sequence[Entry]):
    """A root -> leaf path of a table, as positions (entries made on access)."""

    __slots__ = ("_positions", "_table", "_types")

    def __init__(self, table: EntryTable, positions: list[int]) -> None:
        self._table = table
        self._positions = positions
        self._types: list[str] | None = None

    @property
    def types(self) -> list[str]:
        """The entries' types, root first (makes no entry; read once, the view does not change)."""
        if self._types is None:
            self._types = list(map(self._table.types.__getitem__, self._positions))
        return self._types

    @property
    def ids(self) -> list[str]:
        """The entries' ids, root first (makes no entry)."""
        return list(map(self._table.ids.__getitem__, self._positions))

    def __len__(self) -> int:
        return len(self._positions)

    @overload
    def __getitem__(self, index: int) -> Entry: ...
    @overload
    def __getitem__(self, index: slice) -> list[Entry]: ...
    def __getitem__(self, index: int | slice) -> Entry | list[Entry]:
        if isinstance(index, slice):
            return self._table.at_positions(self._positions[index])
        return self._table._at(self._positions[index])

    def __iter__(self) -> Iterator[Entry]:
        at = self._table._at
        return (at(i) for i in self._positions)

    def __reversed__(self) -> Iterator[Entry]:
        at = self._table._at
        return (at(i) for i in reversed(self._positions))


def types_of(path: Sequence[Entry]) -> list[str]:
    """The types along ``path`` without making entries when it is a :class:`PathView`."""
    return path.types if isinstance(path, PathView) else [e.type for e in path]


def ids_of(path: Sequence[Entry]) -> list[str]:
    """The ids along ``path`` without making entries when it is a :class:`PathView`."""
    return path.ids if isinstance(path, PathView) else [e.id for e in path]

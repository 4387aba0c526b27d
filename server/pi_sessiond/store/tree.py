"""The session tree: entries indexed by id, children, paths, labels, leaf.

Pure and in memory. Invariants:
- ``entries`` is file order, an :class:`~pi_sessiond.store.table.EntryTable`
  (entries of an opened file are made on first use); ``by_id`` maps each id to
  its entry (a later duplicate id wins, as in Pi). Children, paths and roots are
  worked out from the table's id columns, without making entries.
- ``children[p]`` lists the ids whose parent is ``p`` in file order (built
  lazily: opening a file and walking paths never needs it); Pi's tree view
  orders them by timestamp (``sorted_children``).
- An entry is a root when its parent is null, itself, or missing (orphan).
- Paths are walked iteratively and stop at a missing parent or at an entry
  already on the path, so a cycle or self-parented entry can never hang us
  (Pi loops forever on a self-parented entry; deliberate fix). ``walk`` shows
  the entries on a parent cycle too (after the rooted ones), which Pi's tree
  leaves out (deliberate fix).
- Labels resolve file-wide, last write wins; an empty label clears.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.table import EntryMap, EntryTable, PathView


def timestamp_ms(iso: str) -> float:
    """``new Date(iso).getTime()`` for the ISO strings Pi writes; NaN when invalid."""
    try:
        return datetime.fromisoformat(iso).timestamp() * 1000.0
    except (ValueError, TypeError):
        return float("nan")


class SessionTree:
    """All entries of one session and the current leaf."""

    def __init__(self, entries: Sequence[Entry] | None = None) -> None:
        self.entries: EntryTable = entries if isinstance(entries, EntryTable) else EntryTable.of(entries or ())
        self.by_id: EntryMap = EntryMap(self.entries)
        self._children: dict[str | None, list[str]] | None = None
        self.labels: dict[str, str] = {}
        self.label_timestamps: dict[str, str] = {}
        self.name: str | None = None
        self.leaf_id: str | None = None
        if self.entries:
            self._index_all()

    def _index_all(self) -> None:
        # Bulk version of add(): only the entries already made can be labels or names (scan.py).
        for entry in [e for e in self.entries.given() if e.type != "message"]:
            self._apply_meta(entry)
        self.leaf_id = self.entries.ids[-1]

    @property
    def children(self) -> dict[str | None, list[str]]:
        """Parent id -> child ids in file order (built on first use, from the id columns)."""
        if self._children is None:
            children: dict[str | None, list[str]] = {}
            for parent, entry_id in zip(self.entries.parents, self.entries.ids, strict=True):
                siblings = children.get(parent)
                if siblings is None:
                    children[parent] = [entry_id]
                else:
                    siblings.append(entry_id)
            self._children = children
        return self._children

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self.by_id

    def get(self, entry_id: str | None) -> Entry | None:
        """The entry with ``entry_id``, or ``None``."""
        return self.entries.get(entry_id)

    def add(self, entry: Entry) -> None:
        """Index an entry (already in file order) and make it the leaf."""
        self.entries.append(entry)
        if self._children is not None:
            self._children.setdefault(entry.parent_id, []).append(entry.id)
        self.leaf_id = entry.id
        self._apply_meta(entry)

    def _apply_meta(self, entry: Entry) -> None:
        if entry.type == "label":
            self._apply_label(entry)
        elif entry.type == "session_info":
            name = entry.data.get("name")  # the last one decides; a blank name clears
            self.name = name.strip() or None if isinstance(name, str) else None

    def _apply_label(self, entry: Entry) -> None:
        target, label = entry.data.get("targetId"), entry.data.get("label")
        if not isinstance(target, str):
            return
        if isinstance(label, str) and label:
            self.labels[target] = label
            self.label_timestamps[target] = entry.timestamp
        else:
            self.labels.pop(target, None)
            self.label_timestamps.pop(target, None)

    def is_root(self, entry: Entry) -> bool:
        """Pi's root rule: no parent, its own parent, or a missing parent."""
        pid = entry.parent_id
        return pid is None or pid == entry.id or pid not in self.by_id

    def roots(self) -> list[Entry]:
        """Root entries in file order."""
        return [e for e in self.entries if self.is_root(e)]

    def iter_up(self, entry_id: str | None) -> Iterator[Entry]:
        """Entries from ``entry_id`` up to its root (leaf first), cycle-safe."""
        seen: set[str] = set()
        current = self.get(entry_id)
        while current is not None and current.id not in seen:
            seen.add(current.id)
            yield current
            current = self.by_id.get(current.parent_id) if current.parent_id else None

    def descends(self, leaf: str | None, added: Sequence[Entry]) -> bool:
        """Whether the last of the just ``added`` entries descends from ``leaf`` through added entries only."""
        if leaf is None:
            return True
        new = {e.id for e in added}
        for entry in self.iter_up(added[-1].id):
            if entry.id == leaf:
                return True
            if entry.id not in new:
                return False
        return False

    def path(self, entry_id: str | None = None) -> list[Entry]:
        """Root -> ``entry_id`` (default: the leaf), inclusive; ``[]`` if unknown."""
        return list(self.path_view(entry_id))

    def path_view(self, entry_id: str | None = None) -> PathView:
        """:meth:`path` as a view: entries are made only when read (``types``/``ids`` make none)."""
        target = self.leaf_id if entry_id is None else entry_id
        return PathView(self.entries, self.entries.path_positions(target))

    def sorted_children(self, entry_id: str) -> list[Entry]:
        """Children as Pi's ``getTree`` orders them: by timestamp, stable."""
        kids = [self.by_id[c] for c in self.children.get(entry_id, ()) if self._parent_is(c, entry_id)]
        kids.sort(key=lambda e: _sort_key(e.timestamp))
        return kids

    def _parent_is(self, child_id: str, parent_id: str) -> bool:
        child = self.by_id.get(child_id)
        return child is not None and child.parent_id == parent_id and child_id != parent_id

    def common_ancestor(self, a: str | None, b: str | None) -> str | None:
        """Deepest entry on both paths (``None`` when the paths are disjoint)."""
        on_a = {e.id for e in self.iter_up(a)}
        for entry in self.iter_up(b):
            if entry.id in on_a:
                return entry.id
        return None

    def subtree(self, entry_id: str) -> list[Entry]:
        """``entry_id`` and all its descendants, depth-first in tree order."""
        root = self.get(entry_id)
        if root is None:
            return []
        out: list[Entry] = []
        stack = [root]
        seen: set[str] = set()
        while stack:
            node = stack.pop()
            if node.id in seen:
                continue
            seen.add(node.id)
            out.append(node)
            stack.extend(reversed(self.sorted_children(node.id)))
        return out

    def walk(self) -> Iterator[tuple[Entry, int]]:
        """Every entry with its depth, depth-first, roots in file order, then the entries on parent cycles.

        Pi 1.6.0's ``getTree`` starts only from roots, so a cycle (``a`` under
        ``b`` under ``a``) and everything under it is invisible, the leaf
        included. Here each such group follows, in file order, shown from its
        *cycle root*: the cycle's member written first (its ``parentId`` is the
        link that closed the cycle, and stays as written). Deliberate fix
        (``docs/deviations.md``).
        """
        seen: set[str] = set()
        for root in self.roots():
            yield from self._walk_from(root, seen, skip_seen=False)
        if len(seen) >= len(self.by_id):
            return
        order = {e.id: i for i, e in enumerate(self.entries)}
        for entry in self.entries:
            if entry.id not in seen:
                yield from self._walk_from(self._cycle_root(entry, order), seen, skip_seen=True)

    def _walk_from(self, root: Entry, seen: set[str], *, skip_seen: bool) -> Iterator[tuple[Entry, int]]:
        stack = [(root, 0)]
        while stack:
            node, depth = stack.pop()
            if skip_seen and node.id in seen:
                continue
            seen.add(node.id)
            yield node, depth
            stack.extend((c, depth + 1) for c in reversed(self.sorted_children(node.id)))

    def _cycle_root(self, entry: Entry, order: dict[str, int]) -> Entry:
        """The member written first of the parent cycle above ``entry`` (an entry not under any root)."""
        up = list(self.iter_up(entry.id))
        closing = up[-1].parent_id  # iter_up stopped because this parent is already on the way up
        start = next((i for i, e in enumerate(up) if e.id == closing), 0)
        return min(up[start:], key=lambda e: order.get(e.id, 0))


def _sort_key(iso: str) -> float:
    ms = timestamp_ms(iso)
    return 0.0 if ms != ms else ms

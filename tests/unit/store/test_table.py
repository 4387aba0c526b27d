"""EntryTable: paths walked run by run equal Pi's one-step walk, through appends, duplicates and cycles."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.table import EntryTable, PathView


def naive_path(entries: list[Entry], leaf: str) -> list[str]:
    """Pi's walk: byId (later duplicate wins), up until a missing parent or a repeat."""
    by_id = {e.id: e for e in entries}
    out: list[str] = []
    seen: set[int] = set()
    current = by_id.get(leaf)
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        out.append(current.id)
        current = by_id.get(current.parent_id) if current.parent_id else None
    return out[::-1]


ids = st.sampled_from(["a", "b", "c", "d", "e", "f", "g", ""])
parents = st.one_of(st.none(), ids, st.just("prev"))


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(st.tuples(ids, parents), min_size=1, max_size=30), split=st.integers(0, 30))
def test_paths_equal_the_one_step_walk(rows: list[tuple[str, str | None]], split: int) -> None:
    entries: list[Entry] = []
    for n, (eid, parent) in enumerate(rows):
        entry_id = f"{eid}{n % 3}" if eid else f"u{n}"
        previous = entries[-1].id if entries else None
        entries.append(Entry(entry_id, previous if parent == "prev" else parent, "message", "t"))
    table = EntryTable.of(entries[:split])
    for leaf in {e.id for e in entries[:split]}:
        assert [e.id for e in PathView(table, table.path_positions(leaf))] == naive_path(entries[:split], leaf)
    for entry in entries[split:]:  # appended after the links were built: kept up to date
        table.append(entry)
    for leaf in {e.id for e in entries}:
        assert [e.id for e in PathView(table, table.path_positions(leaf))] == naive_path(entries, leaf)
        assert PathView(table, table.path_positions(leaf)).ids == naive_path(entries, leaf)


def test_a_long_chain_is_one_run() -> None:
    entries = [Entry("r", None, "message", "t")]
    for i in range(5000):
        entries.append(Entry(f"e{i}", entries[-1].id, "message", "t"))
    entries.append(Entry("side", "e10", "label", "t"))
    entries.append(Entry("tip", "side", "message", "t"))
    table = EntryTable.of(entries)
    path = PathView(table, table.path_positions("tip"))
    assert path.ids == ["r", *[f"e{i}" for i in range(11)], "side", "tip"]
    assert path.types[-2:] == ["label", "message"]
    assert len(table.path_positions("e4999")) == 5001

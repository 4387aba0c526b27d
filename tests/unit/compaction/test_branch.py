"""Branch collection and preparation, and the file lists a branch accumulates."""

from __future__ import annotations

from tests.unit.compaction.builders import PathBuilder, chars

from pi_sessiond.compaction.branch import (
    collect_entries_for_branch_summary,
    common_ancestor,
    prepare_branch_entries,
)
from pi_sessiond.compaction.fileops import FileOperations

K = 4000


def _tree() -> PathBuilder:
    """u0 - a1 - u2 - a3 (main) and a1 - u4 - a5 (side)."""
    b = PathBuilder()
    b.user("root")  # e0000
    b.assistant("a1")  # e0001
    b.user("u2")  # e0002
    b.assistant("a3")  # e0003
    b.user("u4", parent="e0001")  # e0004
    b.assistant("a5")  # e0005
    return b


def ids(collection: tuple) -> list[str]:
    return [e.id for e in collection]


def test_no_old_leaf_collects_nothing() -> None:
    b = _tree()
    found = collect_entries_for_branch_summary(b.by_id().get, None, "e0003")
    assert found.entries == () and found.common_ancestor_id is None


def test_collects_from_old_leaf_back_to_common_ancestor() -> None:
    b = _tree()
    found = collect_entries_for_branch_summary(b.by_id().get, "e0003", "e0005")
    assert found.common_ancestor_id == "e0001"
    assert ids(found.entries) == ["e0002", "e0003"]


def test_target_on_current_path_summarizes_only_entries_after_it() -> None:
    b = _tree()
    found = collect_entries_for_branch_summary(b.by_id().get, "e0003", "e0002")
    assert found.common_ancestor_id == "e0002"
    assert ids(found.entries) == ["e0003"]


def test_target_descendant_of_old_leaf_collects_nothing() -> None:
    b = _tree()
    found = collect_entries_for_branch_summary(b.by_id().get, "e0001", "e0005")
    assert found.common_ancestor_id == "e0001" and found.entries == ()


def test_disjoint_trees_collect_to_the_root() -> None:
    b = _tree()
    b.user("other root", parent=None)  # e0006
    found = collect_entries_for_branch_summary(b.by_id().get, "e0003", "e0006")
    assert found.common_ancestor_id is None
    assert ids(found.entries) == ["e0000", "e0001", "e0002", "e0003"]


def test_unknown_target_collects_to_the_root() -> None:
    b = _tree()
    found = collect_entries_for_branch_summary(b.by_id().get, "e0003", "nope")
    assert found.common_ancestor_id is None and len(found.entries) == 4


def test_collection_stops_at_a_missing_parent_and_survives_cycles() -> None:
    b = PathBuilder()
    b.user("orphan", parent="missing")  # e0000
    b.assistant("x")  # e0001
    found = collect_entries_for_branch_summary(b.by_id().get, "e0001", "zzz")
    assert ids(found.entries) == ["e0000", "e0001"]
    c = PathBuilder()
    c.user("a", parent="e0001")
    c.user("b", parent="e0000")
    assert len(collect_entries_for_branch_summary(c.by_id().get, "e0001", "x").entries) == 2
    assert common_ancestor(c.by_id().get, "e0000", "e0001") == "e0001"


def test_collection_does_not_stop_at_compactions() -> None:
    b = PathBuilder()
    b.user("u")  # e0000
    b.assistant("a")  # e0001
    b.compaction("e0001")  # e0002
    b.user("after")  # e0003
    found = collect_entries_for_branch_summary(b.by_id().get, "e0003", "e0000")
    assert ids(found.entries) == ["e0001", "e0002", "e0003"]


def test_prepare_excludes_tool_results_and_maps_summaries() -> None:
    b = PathBuilder()
    b.user("u")
    b.assistant("a", calls=[("read", {"path": "r.ts"})])
    b.tool("content", "read")
    b.compaction("e0000", summary="C")
    b.branch_summary("")
    b.custom_message("n")
    b.thinking()
    prep = prepare_branch_entries(b.entries)
    assert [m["role"] for m in prep.messages] == [
        "user",
        "assistant",
        "compactionSummary",
        "branchSummary",
        "custom",
    ]
    assert prep.file_ops == FileOperations(read=frozenset({"r.ts"}))


def test_budget_keeps_newest_messages() -> None:
    b = PathBuilder()
    for i in range(4):
        b.user(chars(K, str(i)))  # 1000 tokens each
    prep = prepare_branch_entries(b.entries, 2500)
    assert [m["content"][0] for m in prep.messages] == ["2", "3"]
    assert prep.total_tokens == 2000


def test_no_budget_keeps_everything() -> None:
    b = PathBuilder()
    for _ in range(4):
        b.user(chars(K))
    assert prepare_branch_entries(b.entries, 0).total_tokens == 4000


def test_summary_entry_fits_anyway_below_ninety_percent() -> None:
    b = PathBuilder()
    b.branch_summary(chars(2 * K))  # 2000 tokens
    b.user(chars(K))  # 1000
    prep = prepare_branch_entries(b.entries, 1500)  # 1000 < 0.9 * 1500
    assert [m["role"] for m in prep.messages] == ["branchSummary", "user"]
    assert prep.total_tokens == 3000


def test_summary_entry_dropped_at_or_above_ninety_percent() -> None:
    b = PathBuilder()
    b.compaction("e0000", summary=chars(2 * K))
    b.user(chars(K))
    prep = prepare_branch_entries(b.entries, 1100)  # 1000 >= 990
    assert [m["role"] for m in prep.messages] == ["user"]


def test_walk_stops_at_first_overflow_even_if_older_would_fit() -> None:
    b = PathBuilder()
    b.user("tiny")
    b.user(chars(3 * K))
    b.user(chars(K))
    prep = prepare_branch_entries(b.entries, 2000)
    assert len(prep.messages) == 1


def test_file_ops_from_branch_summary_details_and_visited_messages_only() -> None:
    b = PathBuilder()
    b.assistant(chars(K), calls=[("read", {"path": "too-old.ts"})])  # not visited
    b.assistant(chars(2 * K), calls=[("edit", {"path": "overflow.ts"})])  # overflows, still scanned
    b.branch_summary("s", details={"readFiles": ["bs-r"], "modifiedFiles": ["bs-m"]})
    b.branch_summary("h", details={"readFiles": ["hook"]}, fromHook=True)
    b.compaction("e0000", details={"readFiles": ["compaction-details-ignored"]})
    b.assistant(chars(K), calls=[("write", {"path": "new.ts"})])
    prep = prepare_branch_entries(b.entries, 1500)
    assert prep.file_ops == FileOperations(
        read=frozenset({"bs-r"}),
        written=frozenset({"new.ts"}),
        edited=frozenset({"bs-m", "overflow.ts"}),
    )


def test_prepare_honours_the_latest_edit_per_target_and_counts_system_messages() -> None:
    b = PathBuilder()
    b.msg({"role": "system", "content": chars(400), "timestamp": 1})  # 0: 100 tokens, kept
    b.user(chars(4000))  # 1: omitted
    b.assistant("a", calls=[("read", {"path": "r.ts"})])  # 2: replaced, so its call is gone
    b.custom_message("note")  # 3: replaced
    b.add("context_edit", targetId="e0001", replacement={"content": "first"})
    b.add("context_edit", targetId="e0001", replacement=None)  # the latest wins
    b.add("context_edit", targetId="e0002", replacement={"content": "edited"})
    b.add("context_edit", targetId="e0003", replacement={"content": "NOTE"})
    prep = prepare_branch_entries(b.entries)
    assert [m["role"] for m in prep.messages] == ["system", "assistant", "custom"]
    assert prep.messages[1]["content"] == [{"type": "text", "text": "edited"}]
    assert prep.messages[2]["content"] == "NOTE"
    assert prep.total_tokens == 100 + 2 + 1
    assert prep.file_ops == FileOperations()

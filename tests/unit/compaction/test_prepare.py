"""prepare_compaction as Pi 1.6.0; indices index the projection."""

from __future__ import annotations

from tests.unit.compaction.builders import PathBuilder, chars, usage

from pi_sessiond.compaction.fileops import FileOperations
from pi_sessiond.compaction.prepare import prepare_compaction
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.store.entry import Entry

K = 4000  # chars of a 1000-token message


def keep(tokens: int) -> CompactionSettings:
    return CompactionSettings(keep_recent_tokens=tokens)


def roles(messages: tuple[dict, ...]) -> list[str]:
    return [str(m["role"]) for m in messages]


def test_none_for_empty_path() -> None:
    assert prepare_compaction([]) is None


def test_none_when_newest_entry_is_a_compaction() -> None:
    b = PathBuilder()
    b.user()
    b.compaction("e0000")
    assert prepare_compaction(b.entries) is None


def test_nothing_new_after_a_compaction_gives_none() -> None:
    b = PathBuilder()
    b.user()
    b.compaction("e0000")
    b.thinking()
    assert prepare_compaction(b.entries) is None  # only the kept user message: nothing to summarize
    b.user(chars(K))
    b.assistant(chars(K))
    assert prepare_compaction(b.entries, keep(1000)) is not None


def test_none_when_first_kept_entry_has_no_id() -> None:
    entry = Entry.from_data({"type": "message", "message": {"role": "user", "content": "x"}})
    assert prepare_compaction([entry]) is None


def test_linear_cut_on_user() -> None:
    b = PathBuilder()
    for _ in range(3):
        b.user(chars(K))
        b.assistant(chars(K), calls=[("read", {"path": "a.ts"})])
        b.tool(chars(K), "read")
    prep = prepare_compaction(b.entries, keep(3000))
    assert prep is not None
    assert (prep.first_kept_entry_id, prep.first_kept_entry_index, prep.is_split_turn) == ("e0006", 6, False)
    assert prep.turn_start_index == -1
    assert roles(prep.messages_to_summarize) == ["user", "assistant", "toolResult"] * 2
    assert prep.turn_prefix_messages == ()
    assert prep.previous_summary is None
    assert not prep.nothing_to_compact
    assert prep.file_lists.read_files == ("a.ts",)
    assert prep.settings == keep(3000)


def test_split_turn_gives_turn_prefix() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant(chars(K))  # 1
    b.user(chars(K))  # 2
    b.assistant(chars(K), calls=[("edit", {"path": "p.ts"})])  # 3
    b.tool(chars(K))  # 4
    b.assistant(chars(K))  # 5
    prep = prepare_compaction(b.entries, keep(1500))
    assert prep is not None
    assert (prep.first_kept_entry_index, prep.turn_start_index, prep.is_split_turn) == (5, 2, True)
    assert roles(prep.messages_to_summarize) == ["user", "assistant"]
    assert roles(prep.turn_prefix_messages) == ["user", "assistant", "toolResult"]
    assert prep.file_lists.modified_files == ("p.ts",)


def test_usage_before_the_newest_compaction_is_not_trusted() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant("a", use=usage(5000))  # 1
    b.user(chars(K))  # 2: kept by the compaction below
    b.assistant("b", use=usage(7000))  # 3
    b.compaction("e0002")  # 4
    b.user(chars(K))  # 5
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None
    assert prep.tokens_before == 3 + 1000 + 1 + 1000  # pure estimate: summary, u2, a3, u5
    b.assistant("c", use=usage(9000))  # 6: after the compaction, trusted
    b.user(chars(K))
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None and prep.tokens_before == 9000 + 1000


def test_usage_before_an_edit_is_not_trusted() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant("a", use=usage(12_000))  # 1
    b.add("context_edit", targetId="e0000", replacement={"content": "tiny"})  # 2
    b.user(chars(K))  # 3
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None and prep.tokens_before == 1 + 1 + 1000


def test_tokens_before_includes_messages_kept_before_the_old_compaction() -> None:
    # §13.2 item 4 is fixed in 0.73.1: no usage anywhere, so every context message is estimated.
    b = PathBuilder()
    b.user(chars(K))  # 0: summarized earlier, not in context
    b.user(chars(K))  # 1: kept by the compaction
    b.compaction("e0001", summary="x" * 400)  # 2
    b.user(chars(K))  # 3
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None
    assert prep.tokens_before == 100 + 1000 + 1000


def test_repeated_compaction_resummarizes_what_the_previous_one_kept() -> None:
    # Upstream #2608: 0.73.1 starts the range at the previous firstKeptEntryId.
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant(chars(K))  # 1
    b.user(chars(K))  # 2: first kept
    b.assistant(chars(K))  # 3
    b.compaction("e0002", summary="PREV")  # 4
    b.user(chars(K))  # 5
    b.assistant(chars(K))  # 6
    prep = prepare_compaction(b.entries, keep(2000))
    assert prep is not None
    assert prep.boundary_start == 1  # projection: [compaction, 2, 3, 5, 6]
    assert prep.first_kept_entry_index == 3 and prep.first_kept_entry_id == "e0005"
    assert roles(prep.messages_to_summarize) == ["user", "assistant"]  # 2, 3; the compaction adds none
    assert prep.messages_to_summarize[0] is b.entries[2].message
    assert prep.previous_summary == "PREV"


def test_range_starts_after_compaction_when_first_kept_is_not_on_path() -> None:
    b = PathBuilder()
    b.user(chars(K))
    b.compaction("elsewhere")  # 1
    b.user(chars(K))  # 2
    b.assistant(chars(K))  # 3
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None and prep.boundary_start == 1  # projection: [compaction, 2, 3]
    assert [p.entry.id for p in prep.projection.entries] == ["e0001", "e0002", "e0003"]


def test_only_the_latest_compaction_counts() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.compaction("e0000", summary="ONE")  # 1
    b.user(chars(K))  # 2
    b.compaction("e0002", summary="TWO")  # 3
    b.user(chars(K))  # 4
    b.assistant(chars(K))  # 5
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None
    assert prep.previous_summary == "TWO"
    assert prep.boundary_start == 1  # projection: [3, 2, 4, 5]
    assert (prep.first_kept_entry_index, prep.turn_start_index) == (3, 2)
    assert prep.messages_to_summarize == (b.entries[2].message,)  # the compaction at 3 adds none
    assert prep.turn_prefix_messages == (b.entries[4].message,)


def test_everything_fits_gives_none() -> None:
    b = PathBuilder()
    b.user("hi")
    b.assistant("hello")
    assert prepare_compaction(b.entries, keep(20_000)) is None


def test_metadata_only_path_gives_none() -> None:
    b = PathBuilder()
    b.model()
    b.thinking()
    assert prepare_compaction(b.entries) is None


def test_a_leading_system_message_alone_is_not_compacted() -> None:
    # 0.73.1 offered to summarize just [system]; 1.6.0 has nothing to summarize.
    b = PathBuilder()
    b.msg({"role": "system", "content": chars(K), "timestamp": 1})
    b.user(chars(K))
    b.assistant(chars(K))
    assert prepare_compaction(b.entries, keep(2000)) is None


def test_system_messages_are_left_out_of_the_lists() -> None:
    b = PathBuilder()
    b.msg({"role": "system", "content": "prompt", "timestamp": 1})
    b.user(chars(K))
    b.msg({"role": "system", "content": "patch", "sections": {"s": "x"}, "timestamp": 2})
    b.assistant(chars(K))
    b.user(chars(K))
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None and roles(prep.messages_to_summarize) == ["user", "assistant"]


def test_edited_messages_are_summarized_as_edited() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant(chars(K))  # 1: omitted
    b.add("context_edit", targetId="e0000", replacement={"content": "short"})  # 2
    b.add("context_edit", targetId="e0001", replacement=None)  # 3
    b.user(chars(K))  # 4
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None  # the back-scan swallows the edits and the omitted entry: the cut lands on 1
    assert (prep.first_kept_entry_id, prep.is_split_turn) == ("e0001", True)
    assert [m["content"] for m in prep.turn_prefix_messages] == ["short"]


def test_large_trailing_tool_result_keeps_its_call() -> None:
    # #9740: the assistant that made the call is kept, its user message becomes the turn prefix.
    b = PathBuilder()
    b.user(chars(K))
    b.assistant("call", calls=[("bash", {"command": "cat big"})])
    b.tool(chars(100 * K))
    prep = prepare_compaction(b.entries, keep(20_000))
    assert prep is not None and prep.first_kept_entry_id == "e0001" and prep.is_split_turn
    assert roles(prep.turn_prefix_messages) == ["user"]


def test_split_turn_with_nothing_before_it_keeps_previous_summary_field() -> None:
    # §13.2 item 3: history is empty, the turn prefix is not; the summary text is decided later.
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.compaction("e0000", summary="PREV")  # 1
    b.assistant(chars(K))  # 2
    b.assistant(chars(K))  # 3
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None
    assert (prep.first_kept_entry_index, prep.turn_start_index, prep.is_split_turn) == (3, 1, True)
    assert prep.messages_to_summarize == ()
    assert roles(prep.turn_prefix_messages) == ["user", "assistant"]
    assert prep.previous_summary == "PREV"
    assert not prep.nothing_to_compact


def test_metadata_before_user_makes_whole_previous_turn_the_prefix() -> None:
    # §13.2 item 6.
    b = PathBuilder()
    b.user(chars(K))
    b.assistant(chars(K))
    b.thinking()
    b.user(chars(K))
    b.assistant(chars(K))
    prep = prepare_compaction(b.entries, keep(2000))
    assert prep is not None
    assert prep.is_split_turn and prep.first_kept_entry_id == "e0002"
    assert prep.messages_to_summarize == ()
    assert roles(prep.turn_prefix_messages) == ["user", "assistant"]


def test_custom_messages_and_branch_summaries_are_summarized() -> None:
    b = PathBuilder()
    b.custom_message("note")
    b.branch_summary("")  # empty: contributes nothing (1.6.0: as in the context)
    b.branch_summary("went on")
    b.user(chars(K))
    b.assistant(chars(K))
    b.user(chars(K))
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None
    assert roles(prep.messages_to_summarize) == ["custom", "branchSummary", "user", "assistant"]


def test_file_ops_accumulate_from_previous_compaction_details() -> None:
    b = PathBuilder()
    b.user(chars(K))
    b.compaction("e0000", details={"readFiles": ["old-r"], "modifiedFiles": ["old-m"]}, fromHook=False)
    b.branch_summary("B", details={"readFiles": ["branch-only"], "modifiedFiles": []})
    b.user(chars(K))
    b.assistant(chars(K), calls=[("write", {"path": "new-w"}), ("read", {"path": "old-m"})])
    b.user(chars(K))
    prep = prepare_compaction(b.entries, keep(1000))
    assert prep is not None
    assert prep.file_ops == FileOperations(
        read=frozenset({"old-r", "old-m"}), written=frozenset({"new-w"}), edited=frozenset({"old-m"})
    )
    assert prep.file_lists.read_files == ("old-r",)
    assert prep.file_lists.modified_files == ("new-w", "old-m")


def test_file_ops_ignore_hook_compaction_details() -> None:
    b = PathBuilder()
    b.user(chars(K))
    b.compaction("e0000", details={"readFiles": ["hook"], "modifiedFiles": ["hook"]}, fromHook=True)
    b.user(chars(K))
    prep = prepare_compaction(b.entries, keep(0))
    assert prep is not None and prep.file_ops == FileOperations()


def test_preparation_is_deterministic_and_frozen() -> None:
    b = PathBuilder()
    for _ in range(5):
        b.user(chars(K))
        b.assistant(chars(K))
    first = prepare_compaction(b.entries, keep(2500))
    assert first == prepare_compaction(b.entries, keep(2500))
    assert first is not None
    try:
        first.tokens_before = 0  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("preparation must be frozen")

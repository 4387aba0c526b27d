"""Cut points as Pi 1.6.0 makes them (raw ``findCutPoint`` and projected)."""

from __future__ import annotations

from collections.abc import Sequence

from tests.unit.compaction.builders import PathBuilder, chars

from pi_sessiond.compaction.cutpoint import (
    CutPoint,
    find_cut_point,
    find_projected_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    is_cut_point,
)
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import entry_messages
from pi_sessiond.store.projection import ProjectedEntry, project_path

K = 4000  # chars of a 1000-token message


def raw(entries: Sequence[Entry]) -> list[ProjectedEntry]:
    """Unedited projections, as the raw-entry ``findCutPoint`` sees them."""
    return [ProjectedEntry(e, entry_messages(e)) for e in entries]


def _turns(b: PathBuilder, n: int, size: int = K) -> None:
    """n turns of user -> assistant (1000 tokens each with the default size)."""
    for _ in range(n):
        b.user(chars(size))
        b.assistant(chars(size))


def test_valid_cut_points_by_role_and_type() -> None:
    b = PathBuilder()
    b.user()
    b.assistant()
    b.tool()
    b.bash()
    b.msg({"role": "custom", "customType": "x", "content": "c", "display": True})
    b.custom_message()
    b.branch_summary()
    b.compaction("e0000")
    b.thinking()
    b.model()
    b.add("custom", customType="x")
    b.label("e0000")
    b.add("session_info", name="n")
    b.branch_summary("")  # 13: an empty summary contributes nothing
    b.msg({"role": "system", "content": "prompt", "timestamp": 1})  # 14
    assert find_valid_cut_points(raw(b.entries), 0, len(b.entries)) == [0, 1, 3, 4, 5, 6]
    assert not is_cut_point(raw(b.entries)[2])  # never a tool result


def test_turn_start_is_any_user_like_message() -> None:
    b = PathBuilder()
    b.user()  # 0
    b.assistant()  # 1
    b.bash()  # 2
    b.assistant()  # 3
    b.custom_message()  # 4
    b.assistant()  # 5
    b.msg({"role": "custom", "customType": "x", "content": "c", "display": True})  # 6: a turn start in 1.6.0
    b.assistant()  # 7
    entries = raw(b.entries)
    assert find_turn_start_index(entries, 1, 0) == 0
    assert find_turn_start_index(entries, 3, 0) == 2
    assert find_turn_start_index(entries, 5, 0) == 4
    assert find_turn_start_index(entries, 7, 0) == 6
    assert find_turn_start_index(entries, 1, 1) == -1


def test_no_cut_points_keeps_everything_from_start() -> None:
    b = PathBuilder()
    b.thinking()
    b.model()
    assert find_cut_point(b.entries, 0, 2, 0) == CutPoint(0, -1, False)
    assert find_cut_point(b.entries, 1, 2, 0) == CutPoint(1, -1, False)


def test_single_assistant_entry_cuts_at_zero() -> None:
    b = PathBuilder()
    b.assistant()
    assert find_cut_point(b.entries, 0, 1, 100).first_kept_entry_index == 0


def test_budget_larger_than_everything_keeps_from_first_cut_point() -> None:
    b = PathBuilder()
    _turns(b, 3)
    assert find_cut_point(b.entries, 0, 6, 50_000) == CutPoint(0, -1, False)


def test_cut_on_user_message_is_not_split() -> None:
    b = PathBuilder()
    _turns(b, 3)
    # newest 2 messages are 2000 tokens; reaching 2000 at index 4 (a user)
    assert find_cut_point(b.entries, 0, 6, 2000) == CutPoint(4, -1, False)


def test_cut_inside_a_turn_is_split_with_turn_start() -> None:
    b = PathBuilder()
    _turns(b, 1)
    b.user(chars(K))  # 2
    b.assistant(chars(K))  # 3
    b.tool(chars(K))  # 4
    b.assistant(chars(K))  # 5
    # 1000 at 5, 2000 at 4 (tool result: cut moves to the next cut point, 5)
    assert find_cut_point(b.entries, 0, 6, 1500) == CutPoint(5, 2, True)
    # 3000 at index 3, an assistant
    assert find_cut_point(b.entries, 0, 6, 3000) == CutPoint(3, 2, True)


def test_custom_messages_count_and_take_an_unsplit_cut() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant(chars(K))  # 1
    b.custom_message(chars(40 * K))  # 2: counts in 1.6.0 (#6326)
    b.assistant(chars(K))  # 3
    b.user(chars(K))  # 4
    assert find_cut_point(b.entries, 0, 5, 2500) == CutPoint(2, -1, False)


def test_tool_results_over_the_budget_keep_their_call() -> None:
    # #9740: the budget is crossed inside trailing tool results: cut at the assistant that made the calls.
    b = PathBuilder()
    b.user(chars(K))
    b.assistant("call")
    b.tool(chars(40 * K))
    assert find_cut_point(b.entries, 0, 3, 5000) == CutPoint(1, 0, True)


def test_walk_back_pulls_preceding_metadata_into_the_kept_part() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.model()  # 2
    b.label("e0000")  # 3
    b.user(chars(K))  # 4
    b.assistant(chars(K))  # 5
    cut = find_cut_point(b.entries, 0, 6, 2000)
    assert cut.first_kept_entry_index == 2


def test_metadata_before_user_turns_clean_boundary_into_split_turn() -> None:
    # §13.2 item 6 / §5.3 quirk: [u0, a1, thinking, u3, a4] cut at u3 -> index 2, split at 0.
    b = PathBuilder()
    b.user(chars(K))
    b.assistant(chars(K))
    b.thinking()
    b.user(chars(K))
    b.assistant(chars(K))
    assert find_cut_point(b.entries, 0, 5, 2000) == CutPoint(2, 0, True)


def test_walk_back_stops_at_custom_message_and_branch_summary_entries() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.branch_summary()  # 2
    b.custom_message()  # 3
    b.user(chars(K))  # 4
    b.assistant(chars(K))  # 5
    assert find_cut_point(b.entries, 0, 6, 2000) == CutPoint(4, -1, False)
    assert find_cut_point(b.entries, 0, 6, 2001) == CutPoint(3, -1, False)  # the note counts 1 token


def test_walk_back_stops_at_compaction_and_at_start() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.compaction("e0000")  # 1
    b.thinking()  # 2
    b.user(chars(K))  # 3
    b.assistant(chars(K))  # 4
    assert find_cut_point(b.entries, 0, 5, 2000).first_kept_entry_index == 2
    b2 = PathBuilder()
    b2.user(chars(K))
    b2.compaction("e0000")  # 1
    b2.user(chars(K))  # 2
    b2.assistant(chars(K))  # 3
    assert find_cut_point(b2.entries, 0, 4, 2000).first_kept_entry_index == 2
    b3 = PathBuilder()
    b3.thinking()  # 0
    b3.model()  # 1
    b3.user(chars(K))  # 2
    assert find_cut_point(b3.entries, 1, 3, 1000).first_kept_entry_index == 1


def test_a_cut_on_bash_is_not_split() -> None:
    b = PathBuilder()
    _turns(b, 1)
    b.bash("ls", chars(K))  # 2
    b.assistant(chars(K))  # 3
    assert find_cut_point(b.entries, 0, 4, 2000) == CutPoint(2, -1, False)


def test_split_without_turn_start_in_range_is_not_split() -> None:
    b = PathBuilder()
    b.user(chars(K))  # 0
    b.assistant(chars(K))  # 1
    b.assistant(chars(K))  # 2
    b.assistant(chars(K))  # 3
    assert find_cut_point(b.entries, 1, 4, 2000) == CutPoint(2, -1, False)


def test_keep_zero_cuts_at_the_newest_cut_point() -> None:
    b = PathBuilder()
    _turns(b, 2)
    b.thinking()
    assert find_cut_point(b.entries, 0, 5, 0) == CutPoint(3, 2, True)


def _edit(b: PathBuilder, target: str, replacement: object = None) -> Entry:
    return b.add("context_edit", targetId=target, replacement=replacement)


def test_omitted_entries_count_nothing_and_are_no_cut_points() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.user(chars(K))  # 2
    b.assistant(chars(40 * K))  # 3: omitted below
    b.user(chars(K))  # 4
    _edit(b, "e0003")  # 5
    entries = project_path(b.entries).entries
    assert find_valid_cut_points(entries, 0, len(entries)) == [0, 1, 2, 4]
    # 1000 at 4, the omitted 3 counts 0, 2000 at 2: a user, clean cut
    assert find_projected_cut_point(entries, 0, 6, 2000) == CutPoint(2, -1, False)


def test_system_messages_count_but_are_no_cut_points() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.user(chars(K))  # 2
    b.msg({"role": "system", "content": chars(4 * K), "timestamp": 1})  # 3: 4000 tokens
    b.assistant(chars(K))  # 4
    entries = project_path(b.entries).entries
    assert find_projected_cut_point(entries, 0, 5, 3000) == CutPoint(4, 2, True)


def test_a_recovery_suffix_advances_the_cut() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.user(chars(8 * K))  # 2: the over-budget input
    b.assistant("", stop="length")  # 3: failed attempt
    b.tool("partial")  # 4
    _edit(b, "e0003")  # 5
    _edit(b, "e0004")  # 6
    entries = project_path(b.entries).entries
    assert find_projected_cut_point(entries, 0, 7, 1000) == CutPoint(3, 2, True)
    assert find_cut_point(b.entries, 0, 7, 1000) == CutPoint(2, -1, False)  # raw: no advance


def test_no_recovery_advance_when_an_edit_replaces_other_content() -> None:
    b = PathBuilder()
    _turns(b, 1)  # 0, 1
    b.user(chars(8 * K))  # 2
    b.assistant("", stop="length")  # 3
    _edit(b, "e0003")  # 4
    _edit(b, "e0000", {"content": "shorter"})  # 5: replaces content outside the suffix
    entries = project_path(b.entries).entries
    assert find_projected_cut_point(entries, 0, 6, 1000) == CutPoint(2, -1, False)

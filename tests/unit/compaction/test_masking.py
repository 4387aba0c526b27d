"""The masking tier's pure part: what is masked and what the placeholder keeps."""

from __future__ import annotations

from tests.unit.compaction.builders import PathBuilder, assistant_msg, tool_result_msg, user_msg

from pi_sessiond.compaction.masking import MARKER, MaskRule, chosen, is_masked, placeholder, select
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.store.projection import project_path

RULE = MaskRule(tools={"read", "bash"}, min_tokens=100, older_than_tokens=1000)
TRACEBACK = "\n".join([f"  line {i} of noise" for i in range(300)] + [
    "FAILED tests/test_users.py::test_duplicate_email - AssertionError: assert 409 == 201"])


def session_with_results(*outputs: tuple[str, str, bool]) -> PathBuilder:
    """user → (assistant calling a tool → its result) per output → a final answer, then recent chatter."""
    b = PathBuilder()
    b.msg(user_msg("fix the duplicate email bug"))
    for name, text, failed in outputs:
        b.msg(assistant_msg("looking", calls=[(name, {"path": "src/users.ts"} if name == "read"
                                               else {"command": "npm test"})], stop="toolUse"))
        b.msg({**tool_result_msg(text, name), "isError": failed})
    b.msg(assistant_msg("done"))
    b.msg(user_msg("x" * 8000))  # recent context: 2000 tokens after every result
    return b


def test_old_bulky_results_of_the_listed_tools_are_picked() -> None:
    b = session_with_results(("read", "a" * 4000, False), ("bash", TRACEBACK, True), ("grep", "g" * 4000, False),
                             ("read", "small", False))
    projection = project_path(b.entries)
    picked = select(projection, RULE, estimate_tokens)
    assert [m.entry.message["toolName"] for m in picked if m.entry.message] == ["read", "bash"]
    assert all(m.tokens >= RULE.min_tokens for m in picked)


def test_nothing_is_picked_inside_the_recent_window() -> None:
    b = session_with_results(("read", "a" * 4000, False))
    rule = MaskRule(tools={"read"}, min_tokens=100, older_than_tokens=10_000)
    assert select(project_path(b.entries), rule, estimate_tokens) == []


def test_the_placeholder_keeps_tool_arguments_outcome_size_and_the_error_tail() -> None:
    b = session_with_results(("bash", TRACEBACK, True))
    projection = project_path(b.entries)
    [masked] = select(projection, RULE, estimate_tokens)
    text = masked.text
    assert text.startswith(MARKER) and masked.entry.id in text
    assert '"command": "npm test"' in text
    assert "outcome: error" in text and f"{len(TRACEBACK)} characters" in text
    assert "AssertionError: assert 409 == 201" in text  # the decisive last line
    assert "line 0 of noise" not in text
    assert len(text) < 2500


def test_an_ok_result_keeps_its_first_and_last_lines() -> None:
    lines = "\n".join(f"row {i}" for i in range(100))
    b = session_with_results(("read", lines + "x" * 3000, False))
    entry = b.entries[2]
    assert entry.message is not None
    text = placeholder(entry, entry.message, {})
    assert "row 0" in text and "row 3" in text and "row 50" not in text and "first and last lines:" in text


def test_masked_and_edited_results_are_not_picked_again() -> None:
    b = session_with_results(("read", "a" * 4000, False))
    target = b.entries[2]
    b.add("context_edit", targetId=target.id, replacement={"content": "[the user trimmed this]"})
    b.msg(user_msg("y" * 8000))
    projection = project_path(b.entries)
    assert select(projection, RULE, estimate_tokens) == []
    assert [m.entry.id for m in chosen(projection, [target.id], estimate_tokens)] == [target.id]
    masked = {"role": "toolResult", "content": [{"type": "text", "text": MARKER + ": read]"}]}
    assert is_masked(masked) and not is_masked(tool_result_msg("plain"))


def test_chosen_refuses_what_is_not_a_tool_result_in_the_context() -> None:
    b = session_with_results(("read", "a" * 4000, False))
    projection = project_path(b.entries)
    user_id = b.entries[0].id
    try:
        chosen(projection, [user_id], estimate_tokens)
    except KeyError as exc:
        assert exc.args[0] == user_id
    else:
        raise AssertionError("a user message was accepted")

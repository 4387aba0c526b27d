"""serialize_conversation (what summarizers read) and the two deliberate fixes."""

from __future__ import annotations

from typing import Any

from tests.unit.compaction.builders import assistant_msg, bash_msg, tool_result_msg, user_msg

from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.serialize import (
    TOOL_RESULT_MAX_CHARS,
    format_tool_call,
    serialize_conversation,
    truncate_for_summary,
)

EMOJI = "\U0001f600"


def test_user_string_and_text_blocks_joined_without_separator() -> None:
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "a"},
        {"type": "image", "data": "AA", "mimeType": "image/png"},
        {"type": "text", "text": "b"},
    ]
    assert serialize_conversation([user_msg("hi")]) == "[User]: hi"
    assert serialize_conversation([user_msg(content)]) == "[User]: ab"


def test_empty_user_and_tool_results_are_skipped() -> None:
    assert serialize_conversation([user_msg(""), tool_result_msg(""), user_msg("x")]) == "[User]: x"


def test_assistant_parts_in_fixed_order_regardless_of_block_order() -> None:
    msg = assistant_msg(None)
    msg["content"] = [
        {"type": "toolCall", "id": "1", "name": "read", "arguments": {"path": "foo.ts"}},
        {"type": "text", "text": "t1"},
        {"type": "thinking", "thinking": "h1"},
        {"type": "text", "text": "t2"},
        {"type": "thinking", "thinking": "h2"},
        {"type": "toolCall", "id": "2", "name": "bash", "arguments": {"command": "ls -la", "timeout": 5}},
    ]
    assert serialize_conversation([msg]) == (  # thinking omitted (1.6.0)
        "[Assistant]: t1\nt2\n\n"
        '[Assistant tool calls]: read(path="foo.ts"); bash(command="ls -la", timeout=5)'
    )


def test_tool_call_values_are_json_stringified() -> None:
    block = {"name": "edit", "arguments": {"path": "a", "n": 2.0, "o": {"k": [1, None]}, "s": 'q"\n'}}
    assert format_tool_call(block) == 'edit(path="a", n=2, o={"k":[1,null]}, s="q\\"\\n")'


def test_tool_call_without_arguments_object_entries() -> None:
    assert format_tool_call({"name": "x", "arguments": {}}) == "x()"
    assert format_tool_call({"name": "x", "arguments": ["a"]}) == 'x(0="a")'


def test_messages_joined_with_blank_line() -> None:
    msgs = [user_msg("q"), assistant_msg("a"), tool_result_msg("r")]
    assert serialize_conversation(msgs) == "[User]: q\n\n[Assistant]: a\n\n[Tool result]: r"


def test_tool_result_of_1500_chars_is_unchanged() -> None:
    text = "y" * 1500
    assert serialize_conversation([tool_result_msg(text)]) == "[Tool result]: " + text


def test_tool_result_of_5000_chars_is_truncated_with_marker() -> None:
    out = serialize_conversation([tool_result_msg("x" * 5000)])
    assert out == "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]"


def test_truncation_boundary_is_exactly_2000_units() -> None:
    assert TOOL_RESULT_MAX_CHARS == 2000
    assert truncate_for_summary("z" * 2000) == "z" * 2000
    assert truncate_for_summary("z" * 2001) == "z" * 2000 + "\n\n[... 1 more characters truncated]"


def test_truncation_counts_utf16_units() -> None:
    text = EMOJI * 1500  # 3000 units
    assert truncate_for_summary(text) == EMOJI * 1000 + "\n\n[... 1000 more characters truncated]"


def test_never_split_surrogate_pair() -> None:
    # Unit 2000 is the high half of an emoji: 1.6.0 (sliceHead) keeps one unit fewer, the marker still says 11.
    text = "a" * 1999 + EMOJI + "b" * 10  # 2011 units
    assert truncate_for_summary(text) == "a" * 1999 + "\n\n[... 11 more characters truncated]"


def test_user_and_assistant_text_never_truncated() -> None:
    long = "w" * 5000
    assert serialize_conversation([user_msg(long)]) == "[User]: " + long
    assert serialize_conversation([assistant_msg(long)]) == "[Assistant]: " + long


def test_fix_null_tool_arguments() -> None:
    # Pi throws a TypeError (Object.entries(null)); we serialize the call without arguments.
    msg = assistant_msg("t", calls=[("ls", None)])
    assert serialize_conversation([msg]) == "[Assistant]: t\n\n[Assistant tool calls]: ls()"
    missing = {"type": "toolCall", "id": "1", "name": "ls"}
    assert format_tool_call(missing) == "ls()"


def test_error_and_aborted_assistants_are_serialized() -> None:
    msgs = [assistant_msg("partial", stop="aborted"), assistant_msg("boom", stop="error")]
    assert serialize_conversation(msgs) == "[Assistant]: partial\n\n[Assistant]: boom"


def test_derived_roles_appear_as_user_lines_after_convert() -> None:
    msgs = [
        bash_msg("ls", "a"),
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1, "timestamp": 1},
    ]
    out = serialize_conversation(convert_to_llm(msgs))
    assert out.startswith("[User]: Ran `ls`\n```\na\n```\n\n[User]: The conversation history")


def test_unknown_roles_are_ignored() -> None:
    assert serialize_conversation([{"role": "bashExecution", "command": "x"}]) == ""
    assert serialize_conversation([]) == ""

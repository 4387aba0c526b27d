"""convert_to_llm wrappers (what providers receive) and entry -> message mapping."""

from __future__ import annotations

from tests.unit.compaction.builders import (
    BASE_MS,
    PathBuilder,
    assistant_msg,
    bash_msg,
    tool_result_msg,
    user_msg,
)

from pi_sessiond.compaction.convert import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    bash_execution_text,
    convert_to_llm,
    entry_message,
)


def _only_text(msg: dict) -> str:
    assert msg["role"] == "user"
    [block] = msg["content"]
    assert block["type"] == "text"
    return str(block["text"])


def test_wrapper_strings_are_byte_exact() -> None:
    assert COMPACTION_SUMMARY_PREFIX == (
        "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
    )
    assert COMPACTION_SUMMARY_SUFFIX == "\n</summary>"
    assert BRANCH_SUMMARY_PREFIX == (
        "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
    )
    assert BRANCH_SUMMARY_SUFFIX == "</summary>"


def test_user_assistant_tool_result_pass_through_as_the_same_objects() -> None:
    msgs = [user_msg("hi"), assistant_msg("yo"), tool_result_msg("out")]
    out = convert_to_llm(msgs)
    assert all(a is b for a, b in zip(out, msgs, strict=True))


def test_bash_execution_with_output() -> None:
    text = bash_execution_text(bash_msg("ls", "a\nb"))
    assert text == "Ran `ls`\n```\na\nb\n```"


def test_bash_execution_without_output_cancelled_and_truncated() -> None:
    msg = bash_msg("sleep 9", "", cancelled=True, exitCode=1, truncated=True, fullOutputPath="/t/o")
    assert bash_execution_text(msg) == (
        "Ran `sleep 9`\n(no output)\n\n(command cancelled)\n\n[Output truncated. Full output: /t/o]"
    )


def test_bash_execution_exit_code_shown_only_when_nonzero() -> None:
    assert bash_execution_text(bash_msg("x", "o", exitCode=2)).endswith("```\n\nCommand exited with code 2")
    assert bash_execution_text(bash_msg("x", "o", exitCode=None)) == "Ran `x`\n```\no\n```"
    assert bash_execution_text(bash_msg("x", "o", exitCode=0)) == "Ran `x`\n```\no\n```"


def test_truncated_without_full_output_path_adds_nothing() -> None:
    assert bash_execution_text(bash_msg("x", "o", truncated=True)) == "Ran `x`\n```\no\n```"


def test_bash_execution_excluded_from_context_is_dropped() -> None:
    msg = bash_msg("x", "o", excludeFromContext=True)
    assert convert_to_llm([msg]) == []


def test_bash_execution_becomes_user_message_keeping_timestamp() -> None:
    [out] = convert_to_llm([bash_msg("ls", "a")])
    assert out["timestamp"] == BASE_MS
    assert _only_text(out) == "Ran `ls`\n```\na\n```"


def test_custom_string_content_becomes_text_block_and_arrays_pass() -> None:
    image = {"type": "image", "data": "AA", "mimeType": "image/png"}
    msgs = [
        {"role": "custom", "customType": "x", "content": "note", "display": True, "timestamp": 1},
        {"role": "custom", "customType": "x", "content": [image], "display": False, "timestamp": 2},
    ]
    first, second = convert_to_llm(msgs)
    assert _only_text(first) == "note"
    assert second["content"] == [image]


def test_summaries_are_wrapped() -> None:
    msgs = [
        {"role": "branchSummary", "summary": "B", "fromId": "x", "timestamp": 1},
        {"role": "compactionSummary", "summary": "C", "tokensBefore": 5, "timestamp": 2},
    ]
    branch, compaction = convert_to_llm(msgs)
    assert _only_text(branch) == BRANCH_SUMMARY_PREFIX + "B</summary>"
    assert _only_text(compaction) == COMPACTION_SUMMARY_PREFIX + "C\n</summary>"


def test_unknown_roles_are_dropped() -> None:
    assert convert_to_llm([{"role": "developer", "content": "x"}]) == []


def test_entry_message_maps_like_pi_compaction() -> None:
    b = PathBuilder()
    u = b.user("q")
    cm = b.custom_message("note", details={"k": 1})
    empty_bs = b.branch_summary("")
    comp = b.compaction(u.id, summary="S")
    meta = b.thinking()
    assert entry_message(u, include_compaction=False) is u.message
    custom = entry_message(cm, include_compaction=False)
    assert custom is not None and custom["role"] == "custom" and custom["details"] == {"k": 1}
    assert custom["timestamp"] == BASE_MS + 1000
    branch = entry_message(empty_bs, include_compaction=False)
    assert branch == {"role": "branchSummary", "summary": "", "fromId": "e0000", "timestamp": BASE_MS + 2000}
    assert entry_message(comp, include_compaction=False) is None
    summary = entry_message(comp, include_compaction=True)
    assert summary is not None and summary["role"] == "compactionSummary"
    assert summary["summary"] == "S" and summary["tokensBefore"] == 1234
    assert entry_message(meta, include_compaction=True) is None

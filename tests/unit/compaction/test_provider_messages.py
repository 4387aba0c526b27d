"""A context as OpenAI and Anthropic request messages: Pi's wording, paired tool calls, alternating roles."""

from __future__ import annotations

import json
from typing import Any

from pi_sessiond.compaction.convert import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX
from pi_sessiond.compaction.provider_messages import NO_RESULT, paired, to_anthropic, to_openai

SUMMARY = {"role": "compactionSummary", "summary": "## Goal\n- ship", "tokensBefore": 900, "timestamp": 1}
SYSTEM = {"role": "system", "content": "You are terse.", "sections": {"tools": "read, bash"}}


def call(call_id: str, stop: str = "toolUse") -> dict[str, Any]:
    return {"role": "assistant", "stopReason": stop, "content": [
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "sig"},
        {"type": "text", "text": "reading"},
        {"type": "toolCall", "id": call_id, "name": "read", "arguments": {"path": "a"}}]}


def result(call_id: str, text: str = "file body") -> dict[str, Any]:
    return {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
            "content": [{"type": "text", "text": text}], "isError": False}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def test_a_dangling_call_after_a_crash_gets_a_synthetic_error_result() -> None:
    out = paired([user("go"), call("c1"), result("c1"), call("c2")])
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult", "assistant", "toolResult"]
    assert out[-1]["toolCallId"] == "c2" and out[-1]["isError"] is True
    assert out[-1]["content"] == [{"type": "text", "text": NO_RESULT}]


def test_failed_answers_and_their_orphan_results_are_left_out_and_a_user_closes_open_calls() -> None:
    out = paired([user("go"), call("c1", stop="error"), result("c1"), call("c2"), user("stop"), result("c2")])
    assert [m["role"] for m in out] == ["user", "assistant", "toolResult", "user"]
    assert out[1]["content"][-1]["id"] == "c2" and out[2]["content"][0]["text"] == NO_RESULT


def test_openai_messages_word_summaries_as_pi_and_pair_calls() -> None:
    out = to_openai([SYSTEM, SUMMARY, user("go"), call("c1"), result("c1")])
    assert out[0] == {"role": "system", "content": "You are terse.\n\nread, bash"}
    assert out[1] == {"role": "user", "content": [
        {"type": "text", "text": COMPACTION_SUMMARY_PREFIX + "## Goal\n- ship" + COMPACTION_SUMMARY_SUFFIX}]}
    assistant = out[3]
    assert assistant["content"] == "reading"
    assert assistant["tool_calls"] == [{"id": "c1", "type": "function",
                                        "function": {"name": "read", "arguments": json.dumps({"path": "a"})}}]
    assert out[4] == {"role": "tool", "tool_call_id": "c1", "content": "file body"}


def test_anthropic_messages_alternate_with_tool_results_in_user_turns() -> None:
    system, out = to_anthropic([SYSTEM, SUMMARY, user("go"), call("c|1"), result("c|1"), user("next")])
    assert system == "You are terse.\n\nread, bash"
    assert [m["role"] for m in out] == ["user", "assistant", "user"]
    assert out[0]["content"][0]["text"].startswith(COMPACTION_SUMMARY_PREFIX)
    assert out[0]["content"][1] == {"type": "text", "text": "go"}
    assert out[1]["content"] == [
        {"type": "thinking", "thinking": "hmm", "signature": "sig"},
        {"type": "text", "text": "reading"},
        {"type": "tool_use", "id": "c_1", "name": "read", "input": {"path": "a"}}]
    assert out[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "c_1", "content": [{"type": "text", "text": "file body"}]},
        {"type": "text", "text": "next"}]


def test_a_synthetic_result_is_an_error_tool_result_for_anthropic() -> None:
    _, out = to_anthropic([user("go"), call("c1")])
    assert out[-1]["content"] == [{"type": "tool_result", "tool_use_id": "c1", "is_error": True,
                                   "content": [{"type": "text", "text": NO_RESULT}]}]

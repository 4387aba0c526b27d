"""Smoke tests: the Pi 1.6.0 oracle runs, writes deterministic files and refuses what 1.6.0 refuses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import OracleError, PiOracle

pytestmark = pytest.mark.parity

SYSTEM = {"role": "system", "content": "You are Pi.", "sections": {"tools": "Use tools."}, "timestamp": 1}
USER = {"role": "user", "content": "hello", "timestamp": 2}


def test_the_oracle_is_pi_1_6_0(pi16: PiOracle) -> None:
    assert pi16.call("ping") == "pong"
    assert pi16.call("version") == "1.6.0"
    with pytest.raises(OracleError, match="no method nope"):
        pi16.call("write", calls=[{"method": "nope"}])
    assert pi16.call("ping") == "pong"


def test_write_is_deterministic_and_uses_pi_s_own_api(pi16: PiOracle) -> None:
    calls: list[dict[str, Any]] = [
        {"method": "appendMessage", "args": [SYSTEM]},
        {"method": "appendMessage", "args": [USER]},
        {"method": "appendContextEdit", "args": [{"$ref": 1}, {"content": "HELLO"}]},
        {"method": "appendCompaction", "args": ["sum", None, 10]},
    ]
    first = pi16.call("write", calls=calls)
    assert first == pi16.call("write", calls=calls)
    lines = [json.loads(line) for line in first["fileText"].splitlines()]
    assert [e.get("id") for e in lines[1:]] == ["00000001", "00000002", "00000003", "00000004"]
    compaction = lines[-1]
    assert compaction["firstKeptEntryId"] == compaction["id"]  # retain-none
    assert compaction["systemMessage"]["sections"] == {"tools": "Use tools."}
    assert lines[3]["targetId"] == "00000002"


def test_a_setup_only_session_writes_no_file(pi16: PiOracle) -> None:
    written = pi16.call("write", calls=[{"method": "appendMessage", "args": [SYSTEM]}])
    assert written["fileText"] is None and written["files"] == {}


def test_load_refuses_a_header_less_file_and_leaves_it(pi16: PiOracle, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text('{"type":"message","id":"a","parentId":null}\n')
    assert pi16.call("load", file=str(path)) == {"error": "Session file is not a valid pi session: <path>"}
    assert path.read_text() == '{"type":"message","id":"a","parentId":null}\n'


def test_context_leads_with_the_checkpoint(pi16: PiOracle, tmp_path: Path) -> None:
    calls = [
        {"method": "appendMessage", "args": [SYSTEM]},
        {"method": "appendMessage", "args": [USER]},
        {"method": "appendCompaction", "args": ["sum", {"$ref": 1}, 10]},
    ]
    path = tmp_path / "s.jsonl"
    path.write_text(pi16.call("write", calls=calls)["fileText"])
    [context] = pi16.call("context", file=str(path))
    assert [m["role"] for m in context["messages"]] == ["system", "compactionSummary", "user"]
    assert [e["id"] for e in context["entries"]] == ["00000003", "00000002"]
    assert context["systemMessage"]["content"] == "You are Pi."


# ----- the compaction ops, checked against what Pi 1.6.0 changed (cut point, tokens, serialization, branches, fork)
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
USAGE = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 12000}


def _assistant(text: str, ts: int, **extra: Any) -> dict[str, Any]:
    content = [{"type": "thinking", "thinking": "secret"}, {"type": "text", "text": text}]
    return {"role": "assistant", "content": content,
            "provider": "p", "model": "m", "stopReason": "stop", "timestamp": ts, **extra}


def _write(pi16: PiOracle, tmp_path: Path, calls: list[dict[str, Any]]) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text(pi16.call("write", calls=calls)["fileText"])
    return path


def test_estimate_counts_images_system_messages_and_skips_zero_usage(pi16: PiOracle) -> None:
    user = {"role": "user", "content": [{"type": "text", "text": "x" * 16}, IMAGE], "timestamp": 1}
    system = {"role": "system", "content": "abcd", "sections": {"a": "xyzw", "b": None}, "toolsAdded": [],
              "timestamp": 1}
    zero = _assistant("b", 3, usage={**USAGE, "totalTokens": 0})
    result = pi16.call("estimate", messages=[user, system, _assistant("a", 2, usage=USAGE), zero])
    assert result["perMessage"][:2] == [1204, 3]  # 16/4 + 1200; (4 + 4 + len("[]")) / 4 rounded up
    assert result["context"]["lastUsageIndex"] == 2  # the all-zero usage after it is skipped


def test_projected_tokens_distrust_usage_before_an_edit(pi16: PiOracle, tmp_path: Path) -> None:
    calls = [{"method": "appendMessage", "args": [USER]},
             {"method": "appendMessage", "args": [_assistant("hi", 3, usage=USAGE)]}]
    path = _write(pi16, tmp_path, calls)
    assert pi16.call("projectedTokens", file=str(path))["tokens"] == 12000
    path = _write(pi16, tmp_path, [*calls, {"method": "appendContextEdit", "args": [{"$ref": 0}, {"content": "h"}]}])
    assert pi16.call("projectedTokens", file=str(path)) == {
        "tokens": 1 + 2, "usageTokens": 0, "trailingTokens": 3, "lastUsageIndex": None}  # "h"; "secret" + "hi"


def test_serialize_omits_thinking(pi16: PiOracle) -> None:
    assert pi16.call("serialize", messages=[_assistant("hi", 1)]) == "[Assistant]: hi"


def test_prepare_returns_none_with_nothing_to_summarize_and_cuts_before_tool_results(pi16: PiOracle,
                                                                                     tmp_path: Path) -> None:
    path = _write(pi16, tmp_path, [{"method": "appendMessage", "args": [SYSTEM]},
                                   {"method": "appendMessage", "args": [USER]}])
    assert pi16.call("prepare", file=str(path))["preparation"] is None
    call = {"type": "toolCall", "id": "c", "name": "read", "arguments": {"path": "a.ts"}}
    calls = [{"method": "appendMessage", "args": [USER]},
             {"method": "appendMessage", "args": [{**_assistant("", 3), "content": [call], "stopReason": "toolUse"}]},
             {"method": "appendMessage", "args": [{"role": "toolResult", "toolCallId": "c", "toolName": "read",
                                                   "content": [{"type": "text", "text": "r" * 28000}],
                                                   "isError": False, "timestamp": 4}]}]
    path = _write(pi16, tmp_path, calls)
    settings = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 1000}
    result = pi16.call("prepare", file=str(path), settings=settings)
    prep = result["preparation"]
    assert (prep["firstKeptEntryId"], prep["isSplitTurn"], result["firstKeptIndex"]) == ("00000002", True, 1)
    assert [m["role"] for m in prep["turnPrefixMessages"]] == ["user"] and result["serialized"] == ""
    assert result["readFiles"] == [] and prep["fileOps"]["read"] == []  # the call is kept, not summarized


def test_collect_branch_honours_edits(pi16: PiOracle, tmp_path: Path) -> None:
    calls = [{"method": "appendMessage", "args": [USER]},
             {"method": "appendMessage", "args": [_assistant("one", 3)]},
             {"method": "appendContextEdit", "args": [{"$ref": 1}, None]},
             {"method": "appendMessage", "args": [{**USER, "content": "two"}]}]
    path = _write(pi16, tmp_path, calls)
    result = pi16.call("collectBranch", file=str(path), oldLeafId="00000004", targetId="00000001")
    assert result["entryIds"] == ["00000002", "00000003", "00000004"]
    assert [m["role"] for m in result["messages"]] == ["user"]  # the omitted assistant is skipped


def test_fork_and_cut_ops(pi16: PiOracle, tmp_path: Path) -> None:
    calls = [{"method": "appendMessage", "args": [USER]},
             {"method": "appendLabelChange", "args": [{"$ref": 0}, "start"]},
             {"method": "appendMessage", "args": [_assistant("hi", 3)]}]
    path = _write(pi16, tmp_path, calls)
    forked = pi16.call("fork", file=str(path), leafId="00000003")
    assert [(e["type"], e["parentId"]) for e in forked["entries"]][:2] == [("message", None), ("message", "00000001")]
    assert forked["entries"][2]["type"] == "label" and forked["fileText"] is not None
    cut = pi16.call("cut", file=str(path), keepRecentTokens=[0, 10**6])
    assert cut["pathIds"] == ["00000001", "00000002", "00000003"]
    assert [r["firstKeptEntryIndex"] for r in cut["results"]] == [1, 0]  # the back-scan takes the label

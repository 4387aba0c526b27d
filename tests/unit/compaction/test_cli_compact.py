"""``pi-sessiond compact FILE [--dry-run]``: the preparation printed, or a compaction written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.compaction.builders import PathBuilder, chars, usage

from pi_sessiond.cli import main
from pi_sessiond.compaction.prompts import SUMMARIZATION_PROMPT, UPDATE_SUMMARIZATION_PROMPT
from pi_sessiond.pipeline.requests import serialize_for_request

K = 4000
KEYS = [
    "firstKeptEntryId",
    "isSplitTurn",
    "tokensBefore",
    "messagesToSummarize",
    "turnPrefixMessages",
    "previousSummary",
    "readFiles",
    "modifiedFiles",
    "serialized",
    "turnPrefixSerialized",
    "prompt",
    "nothingToCompact",
    "requests",
    "requestShape",
]
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def write(tmp_path: Path, b: PathBuilder, name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    lines = [HEADER] + [e.data for e in b.entries]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    code = main(["compact", *argv, "--dry-run", "--json"])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out else None, captured.err


def conversation(tool_path: str = "a.ts") -> PathBuilder:
    b = PathBuilder()
    b.user(chars(K))
    b.assistant(chars(K), calls=[("read", {"path": tool_path})])
    b.tool(chars(K), "read")
    b.user(chars(K))
    b.assistant(chars(K), use=usage(12_345))
    return b


def test_dry_run_prints_the_preparation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, conversation())
    before = path.read_bytes()
    code, doc, _ = run_json(capsys, str(path), "--keep-recent-tokens", "2000")
    assert code == 0
    assert list(doc) == KEYS
    assert doc["firstKeptEntryId"] == "e0003" and doc["isSplitTurn"] is False
    assert [m["role"] for m in doc["messagesToSummarize"]] == ["user", "assistant", "toolResult"]
    assert doc["turnPrefixMessages"] == [] and doc["turnPrefixSerialized"] == ""
    assert doc["readFiles"] == ["a.ts"] and doc["modifiedFiles"] == []
    assert doc["serialized"].startswith("[User]: xxx")
    # ``serialized`` is Pi's (a long tool result keeps its head); the request keeps head and tail (our fix).
    assert "more characters truncated]" in doc["serialized"]
    sent = serialize_for_request(doc["messagesToSummarize"])
    assert "characters omitted ...]" in sent and sent != doc["serialized"]
    assert doc["prompt"] == f"<conversation>\n{sent}\n</conversation>\n\n{SUMMARIZATION_PROMPT}"
    (request,) = doc["requests"]  # the exact request sent: the same prompt, its output limit, no thinking level
    assert request["purpose"] == "history" and request["prompt"] == doc["prompt"] and request["reasoning"] is None
    assert request["systemPrompt"] and 0 < request["maxTokens"] <= 32000
    assert doc["previousSummary"] is None and doc["nothingToCompact"] is False
    assert doc["tokensBefore"] == 12_345
    assert path.read_bytes() == before


def test_instructions_and_previous_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = conversation()
    b.compaction("e0003", summary="PREV")
    b.user(chars(K))
    b.assistant(chars(K))
    path = write(tmp_path, b)
    code, doc, _ = run_json(capsys, str(path), "--keep-recent-tokens", "1500", "--instructions", "tests")
    assert code == 0
    assert doc["previousSummary"] == "PREV"
    assert "<previous-summary>\nPREV\n</previous-summary>\n\n" in doc["prompt"]
    assert doc["prompt"].endswith(UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: tests")


def test_nothing_to_summarize_exits_one_with_pi_s_refusal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, conversation())  # everything fits in keepRecentTokens: Pi 1.6.0 returns no preparation
    code, doc, err = run_json(capsys, str(path))
    assert code == 1 and doc is None
    assert "Nothing to compact (session too small)" in err


def test_split_turn_without_history_has_no_history_prompt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = PathBuilder()
    b.user(chars(K))
    b.assistant(chars(K))
    b.assistant(chars(K))
    path = write(tmp_path, b)
    code, doc, _ = run_json(capsys, str(path), "--keep-recent-tokens", "1000")
    assert code == 0
    assert doc["isSplitTurn"] is True and doc["messagesToSummarize"] == []
    assert doc["turnPrefixSerialized"].startswith("[User]: ")
    assert doc["prompt"] == ""


def test_already_compacted_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = conversation()
    b.compaction("e0003")
    code, doc, err = run_json(capsys, str(write(tmp_path, b)))
    assert code == 1 and doc is None
    assert "Already compacted" in err


def test_empty_session_exits_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_json(capsys, str(write(tmp_path, PathBuilder())))
    assert code == 1
    assert "Nothing to compact" in err


def test_without_dry_run_compacts_with_the_offline_summarizer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, conversation())
    before = path.read_bytes()
    assert main(["compact", str(path), "--keep-recent-tokens", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert list(doc) == ["entry", "tokensBefore", "tokensAfter", "estimatedTokensAfter", "usage", "outcome",
                         "masked", "gate", "requestShape"]
    assert doc["estimatedTokensAfter"] == doc["tokensAfter"] > 0 and doc["outcome"] == "compacted"
    assert set(doc["gate"]) == {"added"} and all(set(a) == {"kind", "text"} for a in doc["gate"]["added"])
    assert doc["usage"] == doc["entry"]["usage"]
    assert doc["entry"]["type"] == "compaction" and "## Goal" in doc["entry"]["summary"]
    data = path.read_bytes()
    assert data.startswith(before) and data.count(b"\n") == before.count(b"\n") + 1


@pytest.mark.parametrize("bad", [["--keep-recent-tokens", "-1"], ["--reserve-tokens", "x"]])
def test_bad_numbers_are_usage_errors(tmp_path: Path, bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, conversation())
    assert main(["compact", str(path), "--dry-run", *bad]) == 2
    (line,) = capsys.readouterr().err.splitlines()  # one line, no usage dump
    assert line.startswith("pi-sessiond compact: argument --") and line.endswith("(see pi-sessiond compact --help)")


def test_missing_file_argument_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compact", "--dry-run"]) == 2


def test_text_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, conversation())
    assert main(["compact", str(path), "--dry-run", "--keep-recent-tokens", "2000"]) == 0
    out = capsys.readouterr().out
    assert "first kept entry: e0003\n" in out
    assert "messages to summarize: 3" in out

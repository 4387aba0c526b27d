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

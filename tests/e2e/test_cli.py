"""The command line as a real subprocess: JSON shapes and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.store.helpers import assistant, user, write_lines


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=120)


def ok_json(*args: str) -> Any:
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_context_json_of_the_real_fixture(real_session: Path) -> None:
    result = ok_json("context", str(real_session), "--json")
    assert list(result) == ["messages", "thinkingLevel", "model", "tokens", "contextWindow", "threshold",
                            "overThreshold"]
    assert len(result["messages"]) == 446
    assert result["tokens"] == 180820  # last valid usage 168018 + 12802 trailing estimate
    assert result["model"] == {"provider": "anthropic", "modelId": "claude-opus-4-5"}
    before_first = ok_json("context", str(real_session), "--leaf", f"{357:08x}", "--json")
    assert "compactionSummary" not in [m["role"] for m in before_first["messages"]]


def test_tree_json_lists_every_entry_after_migration(real_session: Path) -> None:
    result = ok_json("tree", str(real_session), "--json")
    assert result["leafId"] == f"{1002:08x}"
    assert len(result["entries"]) == 1002
    assert result["entries"][0]["id"] == "00000001" and result["entries"][0]["parentId"] is None


def test_tree_json_splices_untouched_lines_verbatim(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "x"), assistant("b", "a", "y")])
    raw_lines = path.read_text().splitlines()[1:]
    done = cli("tree", str(path), "--json")
    assert done.stdout == '{"leafId":"b","entries":[' + ",".join(raw_lines) + "]}\n"


def test_example_commands_and_human_output() -> None:
    for command in ("context", "tree"):
        done = cli(command, "--example")
        assert done.returncode == 0, done.stderr
        assert len(done.stdout.splitlines()) > 10
    tree = ok_json("tree", "--example", "--json")
    assert len(tree["entries"]) > 50


def test_exit_codes(tmp_path: Path) -> None:
    assert cli("context").returncode == 2
    assert cli("context", str(tmp_path / "missing.jsonl")).returncode == 1
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "x")])
    unknown = cli("context", str(path), "--leaf", "nope")
    assert unknown.returncode == 1 and "entry 'nope' is not in the session" in unknown.stderr
    assert cli("no-such-command").returncode == 2


def test_warnings_go_to_stderr_and_output_stays_json(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "x")])
    path.write_text(path.read_text() + "{broken\n")
    done = cli("context", str(path), "--json")
    assert done.returncode == 0
    assert ":3: warning: malformed JSON line skipped" in done.stderr
    assert len(json.loads(done.stdout)["messages"]) == 1


def test_context_tokens_by_tokenizer(real_session: Path, isolated_agent_dir: Path) -> None:
    counts = {t: ok_json("context", str(real_session), "--json", "--tokenizer", t)["tokens"]
              for t in ("pi", "cl100k", "calibrated")}
    assert counts["pi"] == 180820  # Pi's estimate stays the default
    assert counts["cl100k"] != counts["pi"] and counts["calibrated"] != counts["pi"]
    (isolated_agent_dir / "settings.json").write_text('{"tokenizer": "calibrated"}')
    assert ok_json("context", str(real_session), "--json")["tokens"] == counts["calibrated"]
    # An invalid value falls back to the layer below (the default), with a warning naming the file and key.
    (isolated_agent_dir / "settings.json").write_text('{"tokenizer": "nope"}')
    done = cli("context", str(real_session), "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["tokens"] == counts["pi"]
    assert str(isolated_agent_dir / "settings.json") in done.stderr and "tokenizer" in done.stderr


def test_stats_json(real_session: Path) -> None:
    stats = ok_json("stats", str(real_session), "--json")
    assert stats["contextTokens"] == 180820 and stats["contextWindow"] == 200000
    assert stats["messageCounts"]["totalMessages"] == 990  # every message entry of the file, as Pi 1.6.0 counts
    assert stats["estimatedContextTokens"] == stats["contextTokens"]  # the usage is fresh
    assert stats["compactions"] == 2


def test_call_runs_one_request_on_a_fresh_daemon(real_session: Path) -> None:
    stats = ok_json("call", "--open", str(real_session), "pi/getStats")
    assert stats == ok_json("stats", str(real_session), "--json")
    tokens = ok_json("call", "pi/estimateTokens", '{"text": "hello world"}')
    assert tokens == {"tokens": 3, "estimator": "pi"}
    failed = cli("call", "pi/getStats", '{"sessionId": "nope"}')
    assert failed.returncode == 1 and json.loads(failed.stderr)["data"]["reason"] == "unknownSession"
    assert cli("call", "pi/getStats", "[1]").returncode == 2

"""The commands that write summaries (``compact``, ``navigate``, ``demo``) as a real subprocess.

The autouse ``isolated_agent_dir`` fixture points ``PI_CODING_AGENT_DIR`` at an
empty folder and the subprocess inherits it, so the summarizer is the offline
one: deterministic, no network.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.compaction.prompts import BRANCH_SUMMARY_PREAMBLE
from pi_sessiond.examples import example_path
from pi_sessiond.store.session import Session


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=120)


def ok_json(*args: str) -> Any:
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def small_tree(path: Path) -> Path:
    """u1 -> a1 -> u2 -> a2 (leaf)."""
    return write_lines(path, [
        user("u1", None, "First: add a tokenizer", 1),
        assistant("a1", "u1", "Tokenizer added.", 2),
        user("u2", "a1", "Second: fix the lexer", 3),
        assistant("a2", "u2", "Lexer fixed.", 4),
    ])


def test_compact_appends_one_line_to_a_copy_of_the_real_fixture(real_session: Path, tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(real_session, path)
    migrated = Session.open(real_session).render().decode().splitlines()  # v1 -> v3, in memory only
    result = ok_json("compact", str(path), "--json")
    lines = path.read_text().splitlines()
    assert len(lines) == 1004 and lines[:-1] == migrated
    assert json.loads(lines[0])["version"] == 3
    entry = json.loads(lines[-1])
    assert list(result) == ["entry", "tokensBefore", "tokensAfter", "estimatedTokensAfter", "usage", "outcome",
                            "masked", "gate", "requestShape"]
    assert result["entry"] == entry
    assert entry["type"] == "compaction" and entry["parentId"] == f"{1002:08x}"
    assert entry["firstKeptEntryId"] == f"{947:08x}"
    assert result["tokensBefore"] == entry["tokensBefore"] == 180820
    assert 0 < result["tokensAfter"] < result["tokensBefore"]
    assert entry["summary"].startswith("## Goal\n")


def test_compact_text_output_prints_the_summary(tmp_path: Path) -> None:
    path = tmp_path / "example.jsonl"
    shutil.copyfile(example_path(), path)
    done = cli("compact", str(path), "--keep-recent-tokens", "6000")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("## Goal\n")
    assert f"compacted {path}: context " in done.stdout  # results on stdout
    assert json.loads(path.read_text().splitlines()[-1])["type"] == "compaction"


def test_compact_example_leaves_the_bundled_example_untouched() -> None:
    source = example_path()
    before = sha(source)
    result = ok_json("compact", "--example", "--keep-recent-tokens", "6000", "--json")
    assert result["entry"]["type"] == "compaction" and "## Goal" in result["entry"]["summary"]
    assert result["tokensAfter"] < result["tokensBefore"]
    default = ok_json("compact", "--example", "--json")  # --example keeps 6000 recent tokens unless told
    assert default["tokensAfter"] < default["tokensBefore"]
    refused = cli("compact", "--example", "--keep-recent-tokens", "20000")  # ~21k tokens: it all fits
    assert refused.returncode == 1 and "Nothing to compact" in refused.stderr
    assert sha(source) == before


def test_navigate_without_summary_writes_nothing_and_prints_editor_text(tmp_path: Path) -> None:
    path = small_tree(tmp_path / "s.jsonl")
    before = path.read_bytes()
    result = ok_json("navigate", str(path), "u2", "--json")
    assert result == {"leafId": "a1", "editorText": "Second: fix the lexer", "cancelled": False}
    assert ok_json("navigate", str(path), "u1", "--json")["leafId"] is None
    assert ok_json("navigate", str(path), "a1", "--json") == {"leafId": "a1", "cancelled": False}
    assert path.read_bytes() == before


def test_navigate_summarize_and_label_writes_a_summary_and_a_label(tmp_path: Path) -> None:
    path = small_tree(tmp_path / "s.jsonl")
    before = path.read_bytes()
    result = ok_json("navigate", str(path), "u2", "--summarize", "--label", "x", "--json")
    rows = [json.loads(line) for line in path.read_bytes()[len(before):].splitlines()]
    assert [r["type"] for r in rows] == ["branch_summary", "label"]
    summary, label = rows
    assert summary["parentId"] == "a1" and summary["fromId"] == "a2"
    assert summary["summary"].startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal\n")
    assert label["targetId"] == summary["id"] and label["label"] == "x" and label["parentId"] == summary["id"]
    assert result["entry"] == summary
    assert result["leafId"] == label["id"] and result["editorText"] == "Second: fix the lexer"
    assert Session.open(path).tree.labels == {summary["id"]: "x"}


def test_navigate_text_output(tmp_path: Path) -> None:
    path = small_tree(tmp_path / "s.jsonl")
    done = cli("navigate", str(path), "u2", "--summarize", "--instructions", "lexer only")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("leaf: a2 -> ")
    assert BRANCH_SUMMARY_PREAMBLE.splitlines()[0] in done.stdout
    assert "editor text:\nSecond: fix the lexer" in done.stdout


def test_navigate_unknown_target_fails_clearly(tmp_path: Path) -> None:
    path = small_tree(tmp_path / "s.jsonl")
    before = path.read_bytes()
    for extra in ((), ("--summarize", "--label", "x")):
        done = cli("navigate", str(path), "nope", *extra, "--json")
        assert done.returncode == 1
        assert done.stderr.strip() == "pi-sessiond navigate: targetId: entry 'nope' is not in the session"
        assert done.stdout == ""
    assert path.read_bytes() == before


def test_demo_shows_before_after_and_a_summary() -> None:
    before = sha(example_path())
    done = cli("demo")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "Summarizer: offline" in out
    assert out.index("Before:") < out.index("## Goal") < out.index("After:")
    assert "Tokens: " in out and " before -> ~" in out
    assert sha(example_path()) == before

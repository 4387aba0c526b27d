"""The command line people expect: --version, list, settings, context --tail, tree --limit, completion,
compact --show-response, a demo that cleans up, --help in plain text. Each runs the real ``pi-sessiond``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pi_sessiond import __version__
from pi_sessiond.examples import example_path


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def ok(*args: str, env: dict[str, str] | None = None) -> str:
    done = cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    assert ok(flag) == f"pi-sessiond {__version__}\n"


def test_list_shows_pi_s_session_folder_newest_first(isolated_agent_dir: Path) -> None:
    folder = isolated_agent_dir / "sessions" / "--home-dev-projects-acme-api--"
    folder.mkdir(parents=True)
    shutil.copyfile(example_path(), folder / "2026-01-01T00-00-00-000Z_example.jsonl")
    text = ok("list")
    assert "2026-01-01T00-00-00-000Z_example.jsonl" in text and "msgs" in text
    rows = json.loads(ok("list", "--json"))["sessions"]
    assert [Path(r["path"]).name for r in rows] == ["2026-01-01T00-00-00-000Z_example.jsonl"]
    assert "no sessions" in ok("list", "--cwd", "/nowhere")


def test_settings_show_sources_and_problems_with_value_key_and_file(isolated_agent_dir: Path) -> None:
    path = isolated_agent_dir / "settings.json"
    path.write_text(json.dumps({"compaction": {"keepRecentTokens": 9000}, "tokenizer": "gpt"}))
    done = cli("settings")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert "compaction.keepRecentTokens = 9000  (global)" in lines
    assert f"problem: {path}: tokenizer: expected 'pi' or 'cl100k' or 'calibrated', got string \"gpt\"" in lines
    assert json.loads(ok("settings", "--json"))["errors"][0]["key"] == "tokenizer"


def test_context_tail_and_tree_limit_with_its_legend() -> None:
    lines = ok("context", "--example", "--tail", "2").splitlines()
    assert lines[2] == "  … 159 earlier messages (--tail 2)"
    assert [line.split()[0] for line in lines[3:]] == ["159", "160"]
    lines = ok("tree", "--example", "--limit", "3").splitlines()
    assert lines[1].startswith("legend: * the leaf") and "earlier lines (--limit 3)" in lines[2]
    assert len(lines) == 6 and lines[-1].startswith("*")


@pytest.mark.parametrize(("line", "expected"), [("pi-sessiond con", {"context"}),
                                               ("pi-sessiond tree --li", {"--limit"}),
                                               ("pi-sessiond completion ", {"bash", "zsh", "fish", "-h", "--help"})])
def test_completion_completes_from_the_parser(tmp_path: Path, line: str, expected: set[str]) -> None:
    for shell in ("bash", "zsh", "fish"):
        assert "_ARGCOMPLETE" in ok("completion", shell)
    out = tmp_path / "completions"
    env = {"_ARGCOMPLETE": "1", "COMP_LINE": line, "COMP_POINT": str(len(line)), "_ARGCOMPLETE_IFS": "\n",
           "_ARGCOMPLETE_STDOUT_FILENAME": str(out)}
    done = subprocess.run([sys.executable, "-m", "pi_sessiond"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, **env}, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert {word.strip() for word in out.read_text().splitlines()} == expected


def test_compact_show_response_prints_the_raw_answers() -> None:
    result = json.loads(ok("compact", "--example", "--show-response", "--json", "-q"))
    assert result["summarizerResponses"] and all(isinstance(a, str) and a for a in result["summarizerResponses"])
    assert "=== the summarizer's answer 1 of" in ok("compact", "--example", "--show-response", "-q")


def test_the_demo_removes_its_copy_unless_asked_to_keep_it(tmp_path: Path) -> None:
    env = {"TMPDIR": str(tmp_path)}
    assert "removed" in ok("demo", "-q", env=env) and list(tmp_path.iterdir()) == []
    assert "The compacted copy is" in ok("demo", "-q", "--keep", env=env)
    assert [p.name[:17] for p in tmp_path.iterdir()] == ["pi-sessiond-demo-"]


@pytest.mark.parametrize("command", ["context", "tree", "compact", "navigate", "stats", "call", "demo", "completion",
                                     "list", "settings", "hold-lock", "serve"])
def test_help_is_plain_text(command: str) -> None:
    text = ok(command, "--help")
    assert "``" not in text and "::" not in text and not re.search(r":\w+:`", text)

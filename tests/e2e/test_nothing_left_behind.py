"""After the command line or a daemon is done with a session, its folder holds only the sessions.

The real CLI and the real daemon (a subprocess on stdio) write a copy of the
bundled example; afterwards no ``.lock`` (nor any other file) is left beside
it, a stale lock file of a dead process is taken over and removed, and our own
writes are still told apart from another program's appends.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.e2e.stdio_daemon import daemon

from pi_sessiond.examples import example_path

INIT = {"processId": None, "rootUri": None, "capabilities": {}}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=120)


def copy_example(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(example_path(), folder / "example.jsonl"))


def listing(folder: Path) -> list[str]:
    return sorted(os.listdir(folder))


def test_compact_and_navigate_leave_only_the_session(tmp_path: Path) -> None:
    path = copy_example(tmp_path / "sessions")
    done = cli("compact", str(path), "--keep-recent-tokens", "6000", "-q")
    assert done.returncode == 0, done.stderr
    assert listing(path.parent) == ["example.jsonl"]
    target = json.loads(path.read_text().splitlines()[3])["id"]
    done = cli("navigate", str(path), target, "--summarize", "-q")  # right after our own write: not "foreign"
    assert done.returncode == 0, done.stderr
    assert listing(path.parent) == ["example.jsonl"]


def test_a_failed_compaction_leaves_nothing(tmp_path: Path) -> None:
    path = copy_example(tmp_path / "sessions")
    before = path.read_bytes()
    done = cli("compact", str(path), "--keep-recent-tokens", "100000000", "-q")  # everything is kept
    assert done.returncode == 1
    assert listing(path.parent) == ["example.jsonl"] and path.read_bytes() == before


def test_a_stale_lock_of_a_dead_process_is_taken_over_and_removed(tmp_path: Path) -> None:
    path = copy_example(tmp_path / "sessions")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = path.with_name(path.name + ".lock")
    body = {"pid": int(dead.stdout), "program": "pi-sessiond", "since": "2026-01-01T00:00:00.000Z"}
    stale.write_text(json.dumps(body) + "\n")
    done = cli("compact", str(path), "--keep-recent-tokens", "6000", "-q")
    assert done.returncode == 0, done.stderr
    assert listing(path.parent) == ["example.jsonl"]


def test_a_daemon_removes_the_lock_at_close_and_at_exit(tmp_path: Path) -> None:
    first, second = copy_example(tmp_path / "a"), copy_example(tmp_path / "b")
    options = {"settings": {"compaction": {"keepRecentTokens": 6000}}}
    with daemon(init=False) as d:
        d.ok("initialize", {**INIT, "initializationOptions": options})
        for path in (first, second):
            opened = d.ok("pi/openSession", {"path": str(path)})
            d.ok("pi/compact", {"sessionId": opened["sessionId"]})
            assert listing(path.parent) == ["example.jsonl", "example.jsonl.lock"]  # held while open
        d.ok("pi/closeSession", {"sessionId": json.loads(first.read_text().splitlines()[0])["id"]})
        assert listing(first.parent) == ["example.jsonl"]
        d.ok("shutdown", None)
        assert d.proc.stdin is not None
        d.proc.stdin.write(b'Content-Length: 33\r\n\r\n{"jsonrpc":"2.0","method":"exit"}')
        d.proc.stdin.flush()
        assert d.proc.wait(timeout=20) == 0
    assert listing(second.parent) == ["example.jsonl"]


def test_the_examples_trial_copies_are_removed(tmp_path: Path) -> None:
    """``compact --example`` and ``navigate --example`` write a temporary copy, gone when the command ends."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "compact", "--example"], capture_output=True,
                          text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert "compacted a temporary copy of the example" in done.stdout
    first = json.loads(example_path().read_text().splitlines()[1])["id"]
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "navigate", "--example", first, "--label", "x"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert listing(tmp_path) == []

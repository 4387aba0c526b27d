"""Real write faults against the real daemon: every refused write is ``writeFailed`` and leaves no byte behind.

The daemon runs as a subprocess (stdio, LSP framing);
the faults are the OS's own wherever the machine allows it:

- ``EFBIG``: ``RLIMIT_FSIZE`` set in the daemon's process (``preexec_fn``), so a
  write is cut at the limit and then refused, as on a real quota;
- ``ENOSPC``: a 64 KiB tmpfs filled to the last page (needs ``mount``; else
  the ``PI_SESSIOND_FAIL_WRITE`` failpoint, which also writes half and fails);
- ``EROFS``: the same tmpfs remounted read-only; ``EACCES``: ``chmod`` where the
  test is not root (root ignores it), else the failpoint.

After each fault the file is byte for byte what it was, the session still
serves and takes the next append, and a compaction on an unwritable file
fails before the summarizer is asked (the loopback provider sees no request).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import generated, loopback_settings
from tests.e2e.stdio_daemon import daemon
from tests.loopback_provider import LoopbackProvider

BIG_TEXT = "x" * 6000  # one entry larger than a tmpfs page, so a write is cut inside it


def write_failed(reply: dict[str, Any], path: Path, cause: str) -> None:
    error = reply.get("error")
    assert error is not None, reply
    assert error["code"] == -32011, error
    assert error["data"] == {"reason": "writeFailed", "path": str(path), "cause": cause}
    assert str(path) in error["message"] and "Traceback" not in error["message"]


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def two_entries() -> list[dict[str, Any]]:
    return [user(BIG_TEXT), user("second " + BIG_TEXT)]


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "64k") -> Iterator[Path]:
    """A small tmpfs at ``where`` (skips when this machine cannot mount one)."""
    where.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
                          capture_output=True, timeout=30)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode(errors='replace').strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True, timeout=30)


def fill(directory: Path) -> None:
    """Write a filler file until the file system is full."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        with contextlib.suppress(OSError):
            while os.write(fd, b"\0" * 4096):
                pass
    finally:
        os.close(fd)


# ------------------------------------------------------------------ EFBIG
def test_a_file_size_limit_cuts_no_line_into_the_file(tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40)
    before = path.read_bytes()
    with daemon(fsize=len(before) + 1000) as d:  # room for part of the first entry only
        sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
        count = d.ok("pi/getTree", {"sessionId": sid, "limit": 0})["total"]
        write_failed(d.call("pi/append", {"sessionId": sid, "entries": two_entries()}), path, "EFBIG")
        assert path.read_bytes() == before  # the partial write was taken back: no torn line, no first entry
        assert d.ok("pi/getTree", {"sessionId": sid, "limit": 0})["total"] == count
        d.ok("pi/append", {"sessionId": sid, "entries": [user("small")]})  # still serving, still appending
        d.ok("pi/openSession", {"path": str(path)})
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(before.splitlines()) + 1 and json.loads(lines[-1])["message"]["content"] == "small"


def test_a_migration_rewrite_refused_by_the_size_limit_keeps_the_old_file(tmp_path: Path) -> None:
    path = generated(tmp_path / "old.jsonl", entries=40)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["version"] = 2  # the first append rewrites the whole file as v3
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    before = path.read_bytes()
    with daemon(fsize=len(before) + 100) as d:
        sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
        write_failed(d.call("pi/append", {"sessionId": sid, "entries": [user(BIG_TEXT)]}), path, "EFBIG")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.jsonl", "old.jsonl.lock"]  # no temp file left


def test_a_fork_refused_by_the_size_limit_leaves_no_file(tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40)
    size = path.stat().st_size
    with daemon(fsize=size // 2) as d:
        opened = d.ok("pi/openSession", {"path": str(path)})
        reply = d.call("pi/fork", {"sessionId": opened["sessionId"], "entryId": opened["leafId"]})
        assert reply["error"]["code"] == -32011 and reply["error"]["data"]["cause"] == "EFBIG"
        assert Path(reply["error"]["data"]["path"]).parent == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]


# ----------------------------------------------------------------- ENOSPC
def test_a_full_disk_leaves_no_partial_line(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt") as mnt:
        path = generated(mnt / "s.jsonl", entries=20)
        before = path.read_bytes()
        with daemon() as d:
            sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
            d.ok("pi/append", {"sessionId": sid, "entries": [user("takes the lock")]})
            before = path.read_bytes()
            fill(mnt)
            write_failed(d.call("pi/append", {"sessionId": sid, "entries": two_entries()}), path, "ENOSPC")
            assert path.read_bytes() == before
            (mnt / "filler").unlink()
            d.ok("pi/append", {"sessionId": sid, "entries": [user("after the disk was freed")]})
        after = path.read_bytes()
        assert after.startswith(before) and len(after.splitlines()) == len(before.splitlines()) + 1


@pytest.mark.parametrize("cause", ["ENOSPC", "EACCES", "EIO"])
def test_an_injected_write_fault_is_taken_back_too(tmp_path: Path, cause: str) -> None:
    """The failpoint writes half of the append, then fails, as the OS does; for machines without a tmpfs."""
    path = generated(tmp_path / "s.jsonl", entries=20)
    before = path.read_bytes()
    with daemon(env={"PI_SESSIOND_FAIL_WRITE": cause}) as d:
        sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
        write_failed(d.call("pi/append", {"sessionId": sid, "entries": two_entries()}), path, cause)
        assert path.read_bytes() == before
        assert d.ok("pi/getContext", {"sessionId": sid})["messages"]


# ------------------------------------------------------- EROFS / EACCES
def test_a_read_only_mount_fails_a_compaction_before_the_summarizer_is_asked(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "mnt", size="4m") as mnt:
        path = generated(mnt / "s.jsonl", entries=150, seed=5)
        before = path.read_bytes()
        remount = subprocess.run(["mount", "-o", "remount,ro", str(mnt)], capture_output=True, timeout=30)
        assert remount.returncode == 0, remount.stderr
        with LoopbackProvider() as loopback, daemon() as d:
            settings = {**loopback_settings(loopback.base_url), "compaction": {"keepRecentTokens": 2000}}
            d.ok("pi/updateSettings", {"settings": settings})
            sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
            reply = d.call("pi/compact", {"sessionId": sid})
            assert reply["error"]["code"] == -32011 and reply["error"]["data"]["cause"] == "EROFS", reply
            write_failed(d.call("pi/append", {"sessionId": sid, "entries": [user("x")]}), path, "EROFS")
            assert loopback.requests == []  # no (paid) summary was asked for
        assert path.read_bytes() == before


def test_no_permission_fails_a_compaction_before_the_summarizer_is_asked(tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=5)
    before = path.read_bytes()
    env: dict[str, str] = {}
    if os.geteuid() == 0:
        env["PI_SESSIOND_FAIL_WRITE"] = "EACCES"  # root ignores chmod
    else:
        path.chmod(0o444)
    with LoopbackProvider() as loopback, daemon(env=env) as d:
        settings = {**loopback_settings(loopback.base_url), "compaction": {"keepRecentTokens": 2000}}
        d.ok("pi/updateSettings", {"settings": settings})
        sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
        write_failed(d.call("pi/compact", {"sessionId": sid}), path, "EACCES")
        assert loopback.requests == []
    assert path.read_bytes() == before


# -------------------------------------------------------------- the CLI
def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "LOOPBACK_KEY": "k", **(env or {})})


def test_the_cli_refuses_an_unwritable_file_in_one_line_before_the_summarizer(tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=5)
    before = path.read_bytes()
    with LoopbackProvider() as loopback:
        done = cli("compact", str(path), "--provider", "openai", "--base-url", loopback.base_url + "/v1",
                   "--model", "loopback", "--api-key-env", "LOOPBACK_KEY", "--keep-recent-tokens", "2000",
                   env={"PI_SESSIOND_FAIL_WRITE": "EACCES"})
        assert loopback.requests == []
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines() == [f"pi-sessiond compact: cannot write {path}: Permission denied (EACCES)"]
    assert path.read_bytes() == before


def test_the_cli_calls_a_header_less_file_not_a_session(tmp_path: Path) -> None:
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b'{"type":"message","id":"a","parentId":null}\n')
    done = cli("compact", str(path))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"pi-sessiond compact: Session file is not a valid pi session: {path} "
        "(no session header: its first line is a 'message' entry)"
    ]
    assert "locked" not in done.stderr and "Traceback" not in done.stderr

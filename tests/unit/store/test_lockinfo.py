"""The lock body: written by the holder on acquire, read by whoever is refused, tolerant of torn bodies."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.store import lockinfo
from pi_sessiond.store.guard import LockedError
from pi_sessiond.store.session import Session

NOTE = {"type": "session_info", "name": "x"}


def session_file(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])


def test_the_daemon_writes_one_body_line_when_it_takes_the_lock(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    session = Session.open(path)
    session.append([NOTE])
    raw = lockinfo.lock_path(path).read_bytes()
    assert raw.count(b"\n") == 1
    body = json.loads(raw)
    assert body["pid"] == os.getpid()
    assert body["program"] == "pi-sessiond"
    assert body["since"].endswith("Z")
    assert "socket" not in body
    session.close()


def test_a_refused_writer_is_told_who_holds_the_lock(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    first, second = Session.open(path), Session.open(path)
    first.append([NOTE])
    with pytest.raises(LockedError, match=f"pid {os.getpid()}") as refused:
        second.append([NOTE])
    assert refused.value.data["holder"] == {"pid": os.getpid(), "program": "pi-sessiond"}
    first.close()


def test_a_rewritten_body_replaces_the_old_one_whole(tmp_path: Path) -> None:
    lock = tmp_path / "s.jsonl.lock"
    with open(lock, "a+b") as handle:
        lockinfo.write_body(handle, lockinfo.body_for("pi", pid=7, socket="/run/x/pi-1.sock"))
        lockinfo.write_body(handle, lockinfo.body_for("pi", pid=8))
    body = lockinfo.read_body(lock)
    assert body is not None
    assert (body.pid, body.program, body.socket) == (8, "pi", None)
    assert lock.read_bytes().count(b"\n") == 1


@pytest.mark.parametrize("raw", [b"", b'{"pid": 3, "prog', b"[1]", b'{"program": "pi"}', b"\x00\xff"])
def test_torn_empty_or_foreign_bodies_read_as_unknown(tmp_path: Path, raw: bytes) -> None:
    lock = tmp_path / "s.jsonl.lock"
    lock.write_bytes(raw)
    assert lockinfo.read_body(lock) is None
    assert lockinfo.read_body(tmp_path / "missing.lock") is None


def test_a_body_from_a_newer_holder_keeps_unknown_keys_readable(tmp_path: Path) -> None:
    lock = tmp_path / "s.jsonl.lock"
    lock.write_text('{"pid": 5, "program": "pi", "since": "2026-01-01T00:00:00.000Z", "host": "h"}\n')
    holder = lockinfo.holder_of(lockinfo.read_body(lock))
    assert holder is not None and (holder.pid, holder.program) == (5, "pi")


def test_pid_alive_tells_a_running_process_from_a_gone_one() -> None:
    assert lockinfo.pid_alive(os.getpid())
    assert not lockinfo.pid_alive(0)
    assert not lockinfo.pid_alive(2**22 + 12345)  # above Linux's pid_max


def test_the_forwarding_socket_is_a_short_hash_in_the_socket_dir(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    sock = lockinfo.pi_socket_path(Path("/very/long") / ("x" * 200) / "s.jsonl")
    assert sock.parent == tmp_path / "pi-sessiond"
    assert sock.name.startswith("pi-") and len(sock.name) == len("pi-") + 16 + len(".sock")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert lockinfo.socket_dir() == Path(f"/tmp/pi-sessiond-{os.getuid()}")

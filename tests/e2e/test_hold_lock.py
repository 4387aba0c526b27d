"""``pi-sessiond hold-lock``: the lock a live Pi holds through a child, released when its stdin closes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.store import lockinfo
from pi_sessiond.store.guard import LockedError
from pi_sessiond.store.session import Session

NOTE = {"type": "session_info", "name": "x"}
HOLD = [sys.executable, "-m", "pi_sessiond", "hold-lock"]


def session_file(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])


def start(path: Path, *extra: str) -> subprocess.Popen[str]:
    child = subprocess.Popen([*HOLD, str(path), *extra], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None
    ready = json.loads(child.stdout.readline())
    assert ready["ready"] is True and ready["lock"] == f"{path}.lock"
    return child


def writable_soon(path: Path, deadline: float = 60.0) -> bool:
    """Poll until a write to ``path`` is accepted (the holder exited), within a generous deadline."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        session = Session.open(path)
        try:
            session.append([NOTE])
            return True
        except LockedError:
            time.sleep(0.05)
        finally:
            session.close()
    return False


def test_a_held_lock_refuses_writers_naming_pi_and_its_pid(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    child = start(path, "--pid", "4242", "--socket", str(tmp_path / "pi-x.sock"))
    before = path.read_bytes()
    session = Session.open(path)
    with pytest.raises(LockedError, match="Pi \\(pid 4242") as refused:
        session.append([NOTE])
    assert refused.value.data["holder"] == {"pid": 4242, "program": "pi", "socket": str(tmp_path / "pi-x.sock")}
    assert len(session.context().messages) == 2  # reading never needs the lock
    assert path.read_bytes() == before
    second = subprocess.run([*HOLD, str(path)], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                            timeout=120)
    assert second.returncode == 1 and "pid 4242" in second.stderr
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert not lockinfo.lock_path(path).exists()  # let go: nothing left beside the session
    assert writable_soon(path)


def test_pi_s_lines_written_under_the_lock_are_a_holder_s_after_it_lets_go(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    child = start(path, "--pid", str(os.getpid()))  # a Pi that keeps running after it let the session go
    with path.open("a") as fh:  # Pi appends while it holds the lock
        fh.write(json.dumps(user("c", "b", "one more", 3), separators=(",", ":")) + "\n")
    assert child.stdin is not None
    child.stdin.close()
    assert child.wait(timeout=60) == 0
    assert not lockinfo.lock_path(path).exists()
    assert Session.open(path).last_foreign_append is None  # the liveWriter guard does not wait for them
    with path.open("a") as fh:  # a line nobody held the lock for is another program's
        fh.write(json.dumps(user("d", "c", "and another", 4), separators=(",", ":")) + "\n")
    assert Session.open(path).last_foreign_append is not None


def test_killing_the_parent_releases_the_lock(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    parent_code = (
        "import subprocess, sys\n"
        f"child = subprocess.Popen({HOLD!r} + [sys.argv[1]], stdin=subprocess.PIPE, stdout=subprocess.PIPE)\n"
        "sys.stdout.write(child.stdout.readline().decode()); sys.stdout.flush()\n"
        "import time\n"
        "while True: time.sleep(1)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", parent_code, str(path)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    ready = json.loads(parent.stdout.readline())
    assert ready["pid"] == parent.pid  # the default pid is the parent's (Pi's)
    with pytest.raises(LockedError, match=f"pid {parent.pid}"):
        Session.open(path).append([NOTE])
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=60)
    assert writable_soon(path)

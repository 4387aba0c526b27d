"""``pi-sessiond serve`` with whatever stdin and stdout a launcher gives it: a clean end in bounded time.

Each case starts the real daemon through a shell redirection (``/dev/null``,
``/dev/zero``, a closed descriptor, ``/dev/full``) or on a pseudo-terminal and
asserts an exit within 20 s, the documented exit code and no traceback.
"""

from __future__ import annotations

import os
import pty
import select
import shlex
import subprocess
import sys
import time

import pytest

SERVE = f"{shlex.quote(sys.executable)} -m pi_sessiond serve"


def run_shell(redirections: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["bash", "-c", f"exec {SERVE} {redirections}"], capture_output=True, timeout=20)


@pytest.mark.parametrize(
    ("redirections", "code", "stderr_has"),
    [
        ("</dev/null", 0, ""),
        ("</dev/null >/dev/null", 0, ""),
        ("</dev/null 2>&-", 0, ""),
        ("</dev/zero", 1, "unrecoverable framing error"),
        ("</dev/zero >/dev/full", 1, "unrecoverable framing error"),
        ("<&-", 1, "stdin is closed"),
        ("</dev/null >&-", 1, "stdout is closed"),
    ],
    ids=["devnull", "devnull-both", "stderr-closed", "devzero", "devfull", "stdin-closed", "stdout-closed"],
)
def test_any_stdin_and_stdout_end_cleanly(redirections: str, code: int, stderr_has: str) -> None:
    done = run_shell(redirections)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == code, err
    assert "Traceback" not in err and "Warning" not in err
    assert stderr_has in err
    if stderr_has.endswith("is closed"):
        assert len(err.strip().splitlines()) == 1


def test_dev_zero_is_answered_with_a_parse_error_before_closing() -> None:
    done = run_shell("</dev/zero")
    assert done.stdout.startswith(b"Content-Length: ")
    assert b"\"code\":-32700" in done.stdout and b"\"reason\":\"parseError\"" in done.stdout


def test_a_terminal_gets_a_hint_and_ctrl_d_ends_it() -> None:
    pid, fd = pty.fork()
    if pid == 0:  # the child: stdin, stdout and stderr are the terminal
        os.execv(sys.executable, [sys.executable, "-m", "pi_sessiond", "serve"])
    try:
        seen = _read_until(fd, b"Ctrl-D", deadline=time.monotonic() + 20)
        assert b"for an editor" in seen
        os.write(fd, b"\x04")
        _, status = _wait(pid, deadline=time.monotonic() + 20)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        os.close(fd)


def _read_until(fd: int, marker: bytes, deadline: float) -> bytes:
    seen = b""
    while marker not in seen and time.monotonic() < deadline:
        if select.select([fd], [], [], 0.5)[0]:
            seen += os.read(fd, 4096)
    return seen


def _wait(pid: int, deadline: float) -> tuple[int, int]:
    while time.monotonic() < deadline:
        done = os.waitpid(pid, os.WNOHANG)
        if done[0]:
            return done
        time.sleep(0.1)
    os.kill(pid, 9)
    return os.waitpid(pid, 0)

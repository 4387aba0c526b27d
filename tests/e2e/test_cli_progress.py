"""Commands that wait for a model show progress on stderr when it is a terminal, and never on stdout."""

from __future__ import annotations

import os
import pty
import subprocess
import sys


def run_with_terminal_stderr(*args: str) -> tuple[int, str, str]:
    """Run the CLI with stderr on a pseudo-terminal; (exit code, stdout, what the terminal showed)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", *args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not chunk:
            break
        shown += chunk
    out = proc.stdout.read() if proc.stdout else b""
    code = proc.wait(timeout=120)
    os.close(master)
    return code, out.decode(), shown.decode(errors="replace")


def test_compact_and_demo_show_progress_on_a_terminal_and_quiet_hides_it() -> None:
    for command in (["compact", "--example"], ["demo"]):
        code, out, shown = run_with_terminal_stderr(*command)
        assert code == 0, shown
        assert "Compacting session: " in shown and "preparing" in shown, shown
        assert "Compacting session" not in out
    code, _out, shown = run_with_terminal_stderr("compact", "--example", "--quiet")
    assert code == 0 and "Compacting session" not in shown


def test_no_progress_when_stderr_is_not_a_terminal() -> None:
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "compact", "--example"], capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stderr == ""

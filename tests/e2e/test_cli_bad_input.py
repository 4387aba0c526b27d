"""Every subcommand, given bad input, says what is wrong in one line and exits with the documented code.

Exit codes: 1 the operation failed, 2 usage error; never a traceback, nothing on
stdout, the file untouched.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

FILE_COMMANDS = [["context"], ["tree"], ["tree", "--json"], ["stats"], ["compact"], ["compact", "--dry-run"],
                 ["navigate", "--summarize", "00000001"]]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


def one_line(done: subprocess.CompletedProcess[str], code: int, *, contains: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == code, (done.returncode, done.stderr)
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert contains in lines[0], lines[0]
    assert done.stdout == ""
    return lines[0]


def bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    text = tmp_path / "notes.jsonl"
    text.write_text("these are my notes\nnot a session\n")
    binary = tmp_path / "blob.jsonl"
    binary.write_bytes(bytes(range(256)) * 8)
    headerless = tmp_path / "headerless.jsonl"
    headerless.write_text('{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"x"}}\n')
    directory = tmp_path / "dir.jsonl"
    directory.mkdir()
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b'\xef\xbb\xbf{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\n')
    package = tmp_path / "package.json"
    package.write_text('{"name": "x", "version": "1.0.0"}\n')
    missing = tmp_path / "missing.jsonl"
    return {
        "missing": (missing, f"cannot open {missing}: No such file or directory"),
        "text": (text, "not a valid pi session: " + str(text) + " (its first line is not JSON)"),
        "binary": (binary, "(binary content, not JSON lines)"),
        "headerless": (headerless, "(no session header: its first line is a 'message' entry)"),
        "directory": (directory, "not a valid pi session"),
        "bom": (bom, "(it starts with a UTF-8 byte-order mark; save it as UTF-8 without one)"),
        "not-a-session": (package, '(JSON, but not a Pi session: no {"type": "session"} header line)'),
    }


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=" ".join)
def test_files_that_are_not_sessions_are_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    for name, (path, why) in bad_files(tmp_path).items():
        before = path.read_bytes() if path.is_file() else None
        line = one_line(cli(command[0], str(path), *command[1:]), 1, contains=why)
        assert line.startswith(f"pi-sessiond {command[0]}: "), (name, line)
        assert (path.read_bytes() if path.is_file() else None) == before, name


@pytest.mark.parametrize(
    ("args", "contains"),
    [
        (["context"], "FILE or --example is required"),
        (["context", "--no-such-option", "x.jsonl"], "unrecognized arguments"),
        (["compact", "x.jsonl", "--keep-recent-tokens", "-3"], "must not be negative"),
        (["compact", "--example", "x.jsonl"], "not both"),
        (["navigate", "--example"], "TARGET_ID is required"),
        (["call", "pi/getStats", "[1]"], "PARAMS_JSON must be a JSON object"),
        (["call", "pi/getStats", "{nope"], "PARAMS_JSON is not JSON"),
        (["no-such-command"], "unknown command"),
        (["context", "--example", "--tail", "0"], "expected a whole number >= 1, got '0'"),
        (["tree", "--example", "--limit", "x"], "expected a whole number >= 1, got 'x'"),
        (["list", "--cwd"], "expected one argument"),
        (["list", "extra"], "unrecognized arguments"),
        (["settings", "--nope"], "unrecognized arguments"),
        (["completion"], "the following arguments are required: shell"),
        (["completion", "tcsh"], "invalid choice: 'tcsh'"),
        (["demo", "--keep-recent-tokens", "many"], "invalid int value"),
        (["serve", "--tcp", "nope"], "expected HOST:PORT, got 'nope'"),
        (["--tcp", "nope"], "expected HOST:PORT, got 'nope'"),
        (["serve", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args: list[str], contains: str) -> None:
    one_line(cli(*args), 2, contains=contains)


def test_unknown_entries_and_closed_ports_fail_in_one_line(tmp_path: Path) -> None:
    one_line(cli("context", "--example", "--leaf", "nope"), 1, contains="entry 'nope' is not in the session")
    one_line(cli("navigate", "--example", "nope"), 1, contains="entry 'nope' is not in the session")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        one_line(cli("call", "--connect", f"127.0.0.1:{port}", "pi/getStats"), 1, contains="cannot connect to")


def test_an_unwritable_log_file_is_one_line(tmp_path: Path) -> None:
    one_line(cli("serve", "--log-file", str(tmp_path / "no" / "such" / "dir" / "log")), 1, contains="--log-file")


def test_ws_without_websockets_names_the_extra_to_install() -> None:
    hide = "import sys; sys.modules['websockets'] = None; from pi_sessiond.cli import main; "
    done = subprocess.run([sys.executable, "-c", hide + "sys.exit(main(['serve', '--ws', '127.0.0.1:0']))"],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert one_line(done, 1, contains="pip install 'pi-sessiond[ws]'")


def test_navigate_takes_options_in_any_order() -> None:
    for args in (["navigate", "--example", "d23f0824", "--json"], ["navigate", "--json", "--example", "d23f0824"]):
        done = cli(*args)
        assert done.returncode == 0, done.stderr

"""Smoke version of the crash-safety soak (``tests/soak/crash_kill.py``): 15 SIGKILLs of the real daemon.

The checker is tested first on damaged files, so a soak that reports 0
violations is known to be able to report some.
"""

from __future__ import annotations

import fcntl
from pathlib import Path

import orjson
from tests.soak.crash_kill import (
    Stats,
    Tracked,
    check_directory,
    check_file,
    kill_at_failpoint,
    run,
    setup,
    start_daemon,
)

from pi_sessiond.examples import generator


def violations(file: Tracked, migrated: dict[str, str] | None = None) -> list[str]:
    return check_file(file, migrated or {}, Stats(), "test")


def test_checker_flags_a_missing_or_changed_acknowledged_entry(tmp_path: Path) -> None:
    files, _ = setup(tmp_path, seed=5)
    file = files[0]
    file.acked["deadbeef"] = (True, "0" * 16)
    file.acked[file.ids[-1]] = (False, "1" * 16)
    found = " ".join(violations(file))
    assert "deadbeef is missing" in found and f"{file.ids[-1]} has different content" in found


def test_checker_flags_a_half_line_in_the_middle_and_a_shrunk_file(tmp_path: Path) -> None:
    files, _ = setup(tmp_path, seed=5)
    long_a, long_b = files[0], files[1]
    lines = long_a.path.read_bytes().splitlines(keepends=True)
    lines.insert(10, lines[10][:40] + b"\n")
    long_a.path.write_bytes(b"".join(lines))
    long_b.path.write_bytes(long_b.snapshot[:-100])
    assert any("half or malformed line" in v for v in violations(long_a))
    found = violations(long_b)
    assert any("shrank" in v for v in found) and not any("half" in v for v in found)  # a torn LAST line is allowed


def test_checker_accepts_a_torn_tail_and_flags_a_half_v3_rewrite(tmp_path: Path) -> None:
    files, migrated = setup(tmp_path, seed=5)
    long_a, v1 = files[0], files[2]
    with open(long_a.path, "ab") as fh:
        fh.write(b'{"type":"message","id":"0badf00d"')
    assert violations(long_a) == []
    header = orjson.loads(v1.original.splitlines()[0]) | {"version": 3}  # type: ignore[union-attr]
    v1.path.write_bytes(orjson.dumps(header) + b"\n")
    assert any("migrated original entry" in v for v in violations(v1, migrated))


def test_checker_flags_a_leftover_temp_file_and_a_held_lock(tmp_path: Path) -> None:
    files, _ = setup(tmp_path, seed=5)
    (tmp_path / "sessions" / ".long-a.jsonl.4242.tmp").write_bytes(b"partial")
    lock = files[0].path.with_name(files[0].path.name + ".lock")
    with open(lock, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        found = " ".join(check_directory(tmp_path, files, "test"))
    assert "leftover file .long-a.jsonl.4242.tmp" in found and "still locked" in found


def test_fifteen_kills_lose_nothing(tmp_path: Path) -> None:
    stats, _seconds = run(kills=15, seed=7, workdir=tmp_path)
    assert stats.violations == []
    assert stats.kills == 15 and stats.acked_total > 0 and stats.acked_checked >= stats.acked_total


def test_a_temp_file_left_by_a_kill_inside_the_v1_rewrite_is_removed_by_the_next_writer(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "v1.jsonl"
    path.parent.mkdir(parents=True)
    (tmp_path / "agent").mkdir()
    generator.write(path, generator.generate(seed=3, entries=5000, shape="linear", version=1))
    original = path.read_bytes()
    marker = tmp_path / "failpoint"
    armed = {"PI_SESSIOND_FAILPOINTS": "rewrite.before-rename", "PI_SESSIOND_FAILPOINT_MARKER": str(marker)}
    client, proc = start_daemon(tmp_path, armed)
    session_id = client.request("pi/openSession", {"path": str(path)})["sessionId"]
    user = {"type": "message", "message": {"role": "user", "content": "hello", "timestamp": 1}}
    params = {"sessionId": session_id, "entries": [user]}
    client.send({"jsonrpc": "2.0", "id": 100, "method": "pi/append", "params": params})
    assert kill_at_failpoint(proc, marker) == "rewrite.before-rename"
    proc.wait()
    proc.stdin.close()  # type: ignore[union-attr]
    proc.stdout.close()  # type: ignore[union-attr]
    staged = list(path.parent.glob(".v1.jsonl*.tmp"))
    assert len(staged) == 1 and b'"version":3' in staged[0].read_bytes().split(b"\n", 1)[0]  # inside the rewrite
    assert path.read_bytes() == original  # before the rename: the original is intact
    client, proc = start_daemon(tmp_path)  # the next writer takes the lock and cleans up
    try:
        session_id = client.request("pi/openSession", {"path": str(path)})["sessionId"]
        client.request("pi/append", {"sessionId": session_id, "entries": [user]})
    finally:
        proc.kill()
        proc.wait()
    assert sorted(p.name for p in path.parent.glob(".v1.jsonl*.tmp")) == []
    assert b'"version":3' in path.read_bytes().split(b"\n", 1)[0]

"""The watch's lock-file table: a session is reported when first seen and when its lock file changes."""

from __future__ import annotations

import os
from pathlib import Path

from pi_sessiond.service.sessions.lockstat import LockStats


def test_first_sight_and_every_change_of_the_lock_file_are_reported(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    stats = LockStats()
    assert stats.changed({"a": a, "b": b, "new": None}) == {"a", "b", "new"}
    assert stats.changed({"a": a, "b": b, "new": None}) == set()
    lock = tmp_path / "a.jsonl.lock"
    lock.write_text('{"program":"pi"}')
    assert stats.changed({"a": a, "b": b}) == {"a"}
    assert stats.changed({"a": a, "b": b}) == set()
    with open(lock, "r+b") as handle:  # a body rewritten in place, as the lock holder does
        handle.truncate(0)
        handle.write(b'{"program":"pi-sessiond","pid":1}')
    os.utime(lock, ns=(1, 1))  # same size or not, the mtime moves
    assert stats.changed({"a": a, "b": b}) == {"a"}
    lock.unlink()
    assert stats.changed({"a": a, "b": b}) == {"a"}


def test_a_closed_session_is_forgotten_and_new_again_when_reopened(tmp_path: Path) -> None:
    a = tmp_path / "a.jsonl"
    stats = LockStats()
    stats.changed({"a": a})
    assert stats.changed({}) == set()
    assert stats.changed({"a": a}) == {"a"}

"""``store/writemarks.py``: marks of what we wrote, and old ones pruned."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pi_sessiond.store import writemarks


@pytest.fixture
def runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    monkeypatch.setattr(writemarks, "_pruned", False)
    return tmp_path


def test_a_mark_tells_our_write_from_a_later_change(runtime: Path) -> None:
    session = runtime / "s.jsonl"
    session.write_text("{}\n")
    writemarks.note_written(session, os.stat(session))
    assert writemarks.written_by_us(session, os.stat(session))
    with session.open("a") as fh:
        fh.write("{}\n")
    assert not writemarks.written_by_us(session, os.stat(session))


def test_the_first_mark_of_a_process_removes_marks_untouched_for_a_month(runtime: Path) -> None:
    old, recent, fresh = (runtime / f"{name}.jsonl" for name in ("old", "recent", "fresh"))
    for session in (old, recent, fresh):
        session.write_text("{}\n")
    writemarks.note_written(old, os.stat(old))
    writemarks.note_written(recent, os.stat(recent))
    month_ago = time.time() - writemarks.KEEP_SECONDS - 60
    os.utime(writemarks.mark_path(old), (month_ago, month_ago))
    assert writemarks._pruned  # the first note above pruned already (nothing was old then)
    writemarks._pruned = False  # as in a new process (the fixture restores it)
    writemarks.note_written(fresh, os.stat(fresh))
    assert not writemarks.mark_path(old).exists()
    assert writemarks.written_by_us(recent, os.stat(recent)) and writemarks.written_by_us(fresh, os.stat(fresh))

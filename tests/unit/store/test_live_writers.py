"""Another program (Pi) appending while we write: offsets, torn lines, the leaf, the lock's re-checks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.service import idempotency
from pi_sessiond.store import session as session_module
from pi_sessiond.store.guard import ChangedUnderneathError, LockedError, lock_path_of
from pi_sessiond.store.layout import now_iso
from pi_sessiond.store.session import Session

NOTE = {"type": "session_info", "name": "x"}


def session_file(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])


def line(data: dict[str, Any]) -> bytes:
    return json.dumps(data, separators=(",", ":")).encode() + b"\n"


def last_id(path: Path) -> str:
    """The id of the file's last whole line (a line being written meanwhile is not one yet)."""
    data = path.read_bytes()
    return str(json.loads(data[: data.rfind(b"\n")].rsplit(b"\n", 1)[-1])["id"])


class PiStyleWriter(threading.Thread):
    """Appends ``count`` user messages, each parented on the file's last entry (as a running Pi would)."""

    def __init__(self, path: Path, count: int, pause: float) -> None:
        super().__init__(daemon=True)
        self.path, self.count, self.pause = path, count, pause
        self.ids: list[str] = []

    def run(self) -> None:
        for n in range(self.count):
            eid = f"pi{n:05d}"
            data = user(eid, last_id(self.path), f"from Pi {n}")
            data["timestamp"] = now_iso()
            with open(self.path, "ab") as fh:  # one write of one line, no lock: Pi's appendFileSync
                fh.write(line(data))
            self.ids.append(eid)
            time.sleep(self.pause)


def test_fold_in_misses_no_entry_of_a_writer_appending_while_we_write(tmp_path: Path) -> None:
    """Regression: re-reading the size after our own write skipped what Pi wrote meanwhile."""
    path = session_file(tmp_path)
    ours = Session.open(path)
    writer = PiStyleWriter(path, 300, 0.001)
    writer.start()
    written = 0
    while writer.is_alive() or written < 50:
        ours.append([NOTE])  # fsync each time: the window in which Pi's lines used to be skipped
        written += 1
    writer.join(timeout=60)
    ours.refresh()
    on_disk = [json.loads(raw)["id"] for raw in path.read_bytes().splitlines()[1:]]
    missed = [eid for eid in on_disk if ours.tree.get(eid) is None]
    assert missed == [], f"{len(missed)} of {len(writer.ids)} entries of the other writer missed"
    assert [e.id for e in ours.entries] == [e.id for e in Session.open(path).entries] or \
        sorted(e.id for e in ours.entries) == sorted(on_disk)
    assert ours.leaf_id == on_disk[-1]  # every append continued the file's last entry


def test_an_append_built_again_after_another_writer_landed_first_keeps_its_own_ids(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: the second build ran the completer of own ids again, which had used them up
    (``StopIteration``: an internal error for any ``pi/append`` that lost the race to a live Pi)."""
    path = session_file(tmp_path)
    ours = Session.open(path)
    write = ours._file.append
    landed: list[str] = []

    def pi_writes_first(lines: list[bytes]) -> bytes | None:
        if not landed:  # Pi's line lands between our fold-in and our write
            with open(path, "ab") as fh:
                fh.write(line({**user("pi1", last_id(path), "from Pi"), "timestamp": now_iso()}))
            landed.append("pi1")
        return write(lines)

    monkeypatch.setattr(ours._file, "append", pi_writes_first)
    rows: list[dict[str, Any]] = [{"type": "session_info", "name": "one"}, {"type": "session_info", "name": "two",
                                                                          "id": "mine"}]
    written = ours.append(rows, complete=idempotency.completer(idempotency.own_ids(rows)))
    assert landed and [e.parent_id for e in written] == ["pi1", written[0].id] and written[1].id == "mine"
    assert [e.id for e in Session.open(path).entries][-3:] == ["pi1", written[0].id, "mine"]


def test_the_leaf_follows_a_writer_that_continues_our_branch(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    with open(path, "ab") as fh:
        fh.write(line(user("c", "b", "next turn in Pi", 5)) + line(assistant("d", "c", "answer", 6)))
    assert ours.refresh() is True
    assert ours.leaf_id == "d"
    assert [m["role"] for m in ours.context().messages] == ["user", "assistant", "user", "assistant"]


def test_a_torn_line_of_another_writer_is_waited_for_not_mended(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    full = line(user("c", "b", "typed in Pi", 5))
    with open(path, "ab") as fh:
        fh.write(full[:20])

    def finish() -> None:
        time.sleep(0.2)
        with open(path, "ab") as fh:
            fh.write(full[20:])

    finisher = threading.Thread(target=finish)
    finisher.start()
    [mine] = ours.append([NOTE])
    finisher.join()
    lines = path.read_bytes().splitlines(keepends=True)
    assert lines[3] == full  # their line whole, nothing glued to it
    assert json.loads(lines[4])["id"] == mine.id and mine.parent_id == "c"


def test_a_torn_line_that_never_ends_refuses_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_module, "TORN_LINE_WAIT", 0.1)
    path = session_file(tmp_path)
    ours = Session.open(path)
    with open(path, "ab") as fh:
        fh.write(b'{"type":"message","id":"c"')
    before = path.read_bytes()
    with pytest.raises(ChangedUnderneathError, match="not finished"):
        ours.append([NOTE])
    assert path.read_bytes() == before


# ------------------------------------------------------------ foreign appends
def recent_file(tmp_path: Path) -> Path:
    path = session_file(tmp_path)
    with open(path, "ab") as fh:
        data = user("c", "b", "just now", 5)
        data["timestamp"] = now_iso()
        fh.write(line(data))
    return path


def test_a_recent_append_by_another_program_is_seen_at_open(tmp_path: Path) -> None:
    path = recent_file(tmp_path)
    seen = Session.open(path).last_foreign_append
    assert seen is not None and abs(seen - time.time()) < 60


def test_an_old_file_copied_or_touched_now_is_no_recent_append(tmp_path: Path) -> None:
    path = session_file(tmp_path)  # entries from 2026-01-01, file mtime now: the last append is that old
    seen = Session.open(path).last_foreign_append
    assert seen is not None and time.time() - seen > 86400


def test_our_own_last_write_is_not_foreign_when_reopened(tmp_path: Path) -> None:
    path = recent_file(tmp_path)
    first = Session.open(path)
    first.append([NOTE])
    first.close()
    assert Session.open(path).last_foreign_append is None


def test_an_exited_pi_lock_holder_s_appends_are_not_foreign(tmp_path: Path) -> None:
    path = recent_file(tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lock_path_of(path).write_text(json.dumps({"pid": gone.pid, "program": "pi", "since": now_iso()}) + "\n")
    assert Session.open(path).last_foreign_append is None
    lock_path_of(path).write_text(json.dumps({"pid": os.getpid(), "program": "pi", "since": now_iso()}) + "\n")
    assert Session.open(path).last_foreign_append is not None  # alive: its appends count


def test_appends_seen_while_open_are_recorded(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    ours.append([NOTE])
    at_open = ours.last_foreign_append  # the file's entries are from 2026-01-01
    assert at_open is not None and time.time() - at_open > 86400
    with open(path, "ab") as fh:
        fh.write(line(user("c", "b", "typed in Pi", 5)))
    ours.refresh()
    seen = ours.last_foreign_append
    assert seen is not None and abs(seen - time.time()) < 60


# ------------------------------------------------------------------ the lock
def test_a_hard_link_to_the_session_file_is_refused(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    os.link(path, tmp_path / "other-name.jsonl")
    before = path.read_bytes()
    with pytest.raises(LockedError, match="hard links"):
        Session.open(path).append([NOTE])
    assert path.read_bytes() == before


def test_a_deleted_lock_file_is_retaken_before_the_next_write(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    first = Session.open(path)
    first.append([NOTE])
    lock_path_of(path).unlink()
    second = Session.open(path)
    second.append([NOTE])  # takes a new lock file at the same path
    with pytest.raises(LockedError):
        first.append([NOTE])  # its lock file is gone; the new one is held by `second`
    second.close()
    first.append([NOTE])
    assert len(path.read_bytes().splitlines()) == 6
    assert len(first.entries) == 5  # `second`'s entry folded in


def test_an_idle_holder_releases_the_lock_and_retakes_it(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    first = Session.open(path)
    first.append([NOTE])
    assert first.release_if_idle(3600) is False  # written just now
    assert first.release_if_idle(0) is True
    second = Session.open(path)
    second.append([NOTE])  # the lock was free
    with pytest.raises(LockedError, match="another process"):
        first.append([NOTE])
    second.close()
    first.append([NOTE])
    assert len(first.entries) == 5

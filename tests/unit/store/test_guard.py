"""Other writers: the sidecar lock, lines appended by Pi meanwhile, files replaced underneath."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.store.guard import ChangedUnderneathError, LockedError
from pi_sessiond.store.session import Session

NOTE = {"type": "session_info", "name": "x"}


def session_file(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])


def test_a_second_writer_is_locked_out_and_may_still_read(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    first, second = Session.open(path), Session.open(path)
    first.append([NOTE])
    before = path.read_bytes()
    with pytest.raises(LockedError, match="another process"):
        second.append([NOTE])
    assert path.read_bytes() == before
    assert len(second.entries) == 2  # nothing changed in memory either
    assert len(second.context().messages) == 2
    first.close()
    second.append([NOTE])  # the lock is free again
    assert len(path.read_bytes().splitlines()) == 5


def test_the_lock_is_held_across_processes(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    holder = Session.open(path)
    holder.append([NOTE])
    script = (
        "import sys; from pathlib import Path; from pi_sessiond.store.session import Session\n"
        "from pi_sessiond.store.guard import LockedError\n"
        "s = Session.open(Path(sys.argv[1]))\n"
        "try:\n    s.append([{'type': 'session_info', 'name': 'y'}])\nexcept LockedError:\n    sys.exit(3)\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(path)], timeout=60)
    assert done.returncode == 3
    holder.close()
    assert subprocess.run([sys.executable, "-c", script, str(path)], timeout=60).returncode == 0


def test_lines_appended_by_another_program_are_folded_in_not_overwritten(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    theirs = json.dumps(user("c", "b", "typed in Pi", 5), separators=(",", ":")) + "\n"
    with open(path, "a") as fh:  # Pi appends without any lock, on the branch of our leaf
        fh.write(theirs)
    [mine] = ours.append([NOTE])
    lines = path.read_text().splitlines()
    assert lines[3] == theirs.strip()  # kept, byte for byte
    assert json.loads(lines[4])["id"] == mine.id
    assert mine.parent_id == "c"  # their entry continued our branch: the leaf followed it (Pi's rule on load)
    assert [e.id for e in Session.open(path).entries] == ["a", "b", "c", mine.id]


def test_lines_another_program_appended_on_another_branch_leave_our_leaf(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    theirs = json.dumps(user("c", "a", "a side branch", 5), separators=(",", ":")) + "\n"
    with open(path, "a") as fh:
        fh.write(theirs)
    [mine] = ours.append([NOTE])
    assert mine.parent_id == "b"
    assert ours.tree.get("c") is not None and "c" in ours.tree.children["a"]


def test_a_file_replaced_or_shortened_underneath_is_not_written(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    ours = Session.open(path)
    ours.append([NOTE])
    path.write_bytes(path.read_bytes()[:-40])
    with pytest.raises(ChangedUnderneathError, match="reopen"):
        ours.append([NOTE])

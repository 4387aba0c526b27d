"""Only the sessions used last keep their parsed state; a busy one keeps it."""

from __future__ import annotations

from pathlib import Path

from pi_sessiond.examples.generator import write_stream
from pi_sessiond.service.sessions.registry import OpenSession
from pi_sessiond.service.sessions.shedding import Shedder
from pi_sessiond.store.session import Session


def parsed(session: Session) -> int:
    """How many entries are made and hold a parsed body."""
    return sum(entry is not None and entry._data is not None for entry in session.tree.entries._objs)


def _opened(tmp_path: Path, name: str) -> OpenSession:
    path = tmp_path / f"{name}.jsonl"
    write_stream(path, seed=len(name), entries=60)
    session = Session.open(path)
    session.context()
    return OpenSession(key=name, session=session)


def test_only_the_sessions_used_last_keep_their_parsed_state_and_a_busy_one_keeps_it(tmp_path: Path) -> None:
    a, b, c, d = (_opened(tmp_path, name) for name in ("a", "bb", "ccc", "dddd"))
    shedder = Shedder(busy=lambda key: key == "ccc", keep=2)
    for opened in (a, b, c):
        shedder.touch(opened)
    assert parsed(a.session) == 0 and parsed(b.session) > 0 and parsed(c.session) > 0
    shedder.touch(b)  # used again: the most recent, c is now the least
    shedder.touch(d)
    assert parsed(c.session) > 0  # busy (a job runs on it): not shed
    assert parsed(b.session) > 0 and parsed(d.session) > 0

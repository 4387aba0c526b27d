"""Ids and paths from clients cannot reach outside the sessions directory or the file they name."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_protocol.errors import REASON_CODES
from pi_protocol.params import AppendParams, CreateSessionParams, OpenSessionParams
from pi_sessiond.errors import InvalidParams, NotASession

from .fakes import make_daemon, open_file, session_file, user


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", ".hidden", "x" * 200, "a*", "a?b", "[ab]", "a b", ""])
def test_session_ids_that_could_escape_or_glob_are_refused(tmp_path: Path, bad: str) -> None:
    daemon, _ = make_daemon(tmp_path)
    with pytest.raises(InvalidParams, match="sessionId"):
        daemon.create_session(CreateSessionParams(cwd=str(tmp_path), session_id=bad))
    with pytest.raises(InvalidParams, match="sessionId"):
        daemon.open_session(OpenSessionParams(session_id=bad))
    assert not any(p.name.endswith(".jsonl") for p in tmp_path.rglob("*"))


def test_a_valid_custom_id_stays_in_the_sessions_directory(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    info = daemon.create_session(CreateSessionParams(cwd="/w", session_id="my-session.v2"))
    assert info.path is not None and Path(info.path).parent == tmp_path / "sessions"


def test_only_regular_files_are_opened(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotASession, match="a FIFO"):  # and does not block on the FIFO
        daemon.open_session(OpenSessionParams(path=str(fifo)))
    with pytest.raises(NotASession, match="a directory") as caught:  # notASession, not an OS error
        daemon.open_session(OpenSessionParams(path=str(tmp_path)))
    assert caught.value.reason == "notASession"


def test_a_header_less_file_is_refused_as_not_a_session(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    path = tmp_path / "junk.jsonl"
    path.write_bytes(b'{"type":"message","id":"a","parentId":null}\n')
    with pytest.raises(NotASession, match=r"^Session file is not a valid pi session: ") as caught:
        daemon.open_session(OpenSessionParams(path=str(path)))
    assert caught.value.reason == "notASession" and caught.value.data == {"path": str(path)}
    assert REASON_CODES[caught.value.reason] == -32010
    assert path.read_bytes() == b'{"type":"message","id":"a","parentId":null}\n'


async def test_a_symlinked_session_is_written_at_its_target_and_stays_a_link(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    target = session_file(tmp_path, "real.jsonl")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    size = target.stat().st_size
    sid = open_file(daemon, link)
    await daemon.append(AppendParams(session_id=sid, entries=[user("through the link")]))
    assert link.is_symlink() and link.resolve() == target
    assert target.stat().st_size > size
    assert (tmp_path / "real.jsonl.lock").exists() and not (tmp_path / "link.jsonl.lock").exists()
    assert open_file(daemon, target) == sid  # the same file is the same session

"""A tail-first session whose whole-file read fails is dropped, and the client is told (``sessions/loading.py``).

The daemon service in-process on real files; the background read is held back
(``Registry.load_delay``) so the file can change between the open and the read.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from tests.unit.store.helpers import chain, compacted, compaction, thinking, write_lines

from pi_protocol import methods
from pi_protocol.params import GetContextParams, GetTreeParams, OpenSessionParams, SessionParams, UpdateSettingsParams
from pi_sessiond.errors import PiError, UnknownSession
from pi_sessiond.service.daemon import Daemon
from pi_sessiond.store.errors import NotASessionError

from .fakes import Events, make_daemon


def tail_first(tmp_path: Path) -> tuple[Daemon, Events, Path, str]:
    daemon, events = make_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"tailOpenBytes": 1}}))
    daemon.registry.load_delay = 3600.0  # no background read: the test decides when it happens
    path = write_lines(tmp_path / "s.jsonl", compacted(300, 30))
    info = daemon.open_session(OpenSessionParams(path=str(path)))
    assert info.loading
    return daemon, events, path, info.session_id


def test_the_context_is_answered_from_the_tail_and_the_first_other_request_reads_the_file(tmp_path: Path) -> None:
    daemon, events, _, sid = tail_first(tmp_path)
    early = daemon.get_context(GetContextParams(session_id=sid))
    assert events.of(methods.SESSION_LOADED) == []  # still the tail
    tree = daemon.get_tree(GetTreeParams(session_id=sid, limit=1))
    assert tree.total == 331
    (loaded,) = events.of(methods.SESSION_LOADED)
    assert loaded == {"sessionId": sid, "leafId": tree.leaf_id, "entryCount": 331, "warnings": [],
                      "contextChanged": False}
    assert daemon.get_context(GetContextParams(session_id=sid)) == early


@pytest.mark.parametrize("change", ["not a session", "removed"])
def test_a_failed_whole_file_read_drops_the_session(tmp_path: Path, change: str) -> None:
    daemon, events, path, sid = tail_first(tmp_path)
    if change == "removed":
        path.unlink()
    else:
        path.write_bytes(b"\x00\x01 not a session\n")
    with pytest.raises((PiError, NotASessionError)):
        daemon.get_stats(SessionParams(session_id=sid))
    (loaded,) = events.of(methods.SESSION_LOADED)
    assert loaded["error"] and loaded["entryCount"] == 0
    with pytest.raises(UnknownSession):
        daemon.get_context(GetContextParams(session_id=sid))


def test_a_session_closed_while_loading_is_never_read_in_full(tmp_path: Path) -> None:
    daemon, events, path, sid = tail_first(tmp_path)
    loading = daemon.registry.get(sid).loading
    assert loading is not None
    asyncio.run(daemon.close_session(SessionParams(session_id=sid)))
    with pytest.raises(UnknownSession):
        loading.wait()  # what the background timer would do later
    assert events.of(methods.SESSION_LOADED) == [] and loading.session is None
    again = daemon.open_session(OpenSessionParams(path=str(path)))  # a new open, tail-first again
    assert again.loading and again.session_id == sid
    assert daemon.get_tree(GetTreeParams(session_id=sid, limit=1)).total == 331


def test_a_context_guessed_wrong_is_corrected_once_the_whole_file_is_read(tmp_path: Path) -> None:
    """The newest thinking change is on a branch the path left: the tail's one guess is wrong, and the
    whole-file read says so (``store/tailopen.py``, ``docs/deviations.md``)."""
    daemon, events = make_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"tailOpenBytes": 1}}))
    daemon.registry.load_delay = 3600.0
    lines = [thinking("t0", None, "low"), *chain(200, parent="t0")]
    fork_point = lines[100]["id"]
    lines += [thinking("t1", lines[-1]["id"], "high"), *chain(5, 500, "t1")]  # the abandoned branch
    lines += chain(300, 1000, fork_point)
    lines += [compaction("c1", lines[-1]["id"], lines[-10]["id"]), *chain(20, 2000, "c1")]
    path = write_lines(tmp_path / "s.jsonl", lines)
    sid = daemon.open_session(OpenSessionParams(path=str(path))).session_id
    early = daemon.get_context(GetContextParams(session_id=sid))
    assert early.thinking_level == "high"  # the guess
    daemon.get_stats(SessionParams(session_id=sid))  # needs the whole file
    (loaded,) = events.of(methods.SESSION_LOADED)
    assert loaded["contextChanged"] is True
    assert events.of(methods.SESSION_CHANGED) == [{"sessionId": sid, "leafId": loaded["leafId"], "reason": "loaded"}]
    corrected = daemon.get_context(GetContextParams(session_id=sid))
    assert corrected.thinking_level == "low" and corrected.messages == early.messages

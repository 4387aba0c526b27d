"""Files that once hung or broke the daemon: every one is refused or served.

One path check (``store/pathcheck.py``) runs before anything reads a session
file: FIFOs, devices, sockets, directories and symlinks to them are
``notASession``, files above ``daemon.maxSessionBytes`` are ``tooLarge``, and
``pi/listSessions`` skips all of them. Calls that could block on a FIFO run
in a thread with a generous deadline, and the FIFO is opened for writing on
the way out, so a regression fails the test instead of hanging the suite.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pi_protocol.errors import REASON_CODES
from pi_protocol.params import (
    AppendParams,
    CreateSessionParams,
    GetContextParams,
    GetSettingsParams,
    GetTreeParams,
    ListSessionsParams,
    OpenSessionParams,
    SessionParams,
    UpdateSettingsParams,
)
from pi_sessiond.errors import InvalidParams, NotASession, TooLarge
from pi_sessiond.store.errors import TooLargeError
from pi_sessiond.store.pathcheck import check_line_count, check_new_file

from .fakes import make_daemon, open_file, session_file, user

T = TypeVar("T")
DEADLINE = 60.0


def within_deadline(call: Callable[[], T], fifos: list[Path]) -> T:
    """``call()`` in a thread; if it has not returned in :data:`DEADLINE` seconds, unblock the FIFOs and fail."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(call)
        try:
            return future.result(timeout=DEADLINE)
        except concurrent.futures.TimeoutError:
            for fifo in fifos:  # a reader blocked in open() goes on once a writer appears
                with contextlib.suppress(OSError):
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            pytest.fail(f"{call} blocked on a FIFO")


@pytest.fixture
def hostile_dir(tmp_path: Path) -> Iterator[tuple[Path, list[Path]]]:
    """The sessions folder with one real session and a FIFO, devices, a socket and a directory named ``*.jsonl``."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    session_file(folder, "2026-01-01T00-00-00-000Z_real.jsonl")
    fifo = folder / "2026-01-02T00-00-00-000Z_fifo.jsonl"
    os.mkfifo(fifo)
    (folder / "2026-01-03T00-00-00-000Z_zero.jsonl").symlink_to("/dev/zero")
    (folder / "2026-01-04T00-00-00-000Z_null.jsonl").symlink_to("/dev/null")
    (folder / "2026-01-05T00-00-00-000Z_dir.jsonl").mkdir()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(folder / "2026-01-06T00-00-00-000Z_sock.jsonl"))
    try:
        yield folder, [fifo]
    finally:
        listener.close()


def test_listing_skips_fifos_devices_sockets_and_directories_without_hanging(
    tmp_path: Path, hostile_dir: tuple[Path, list[Path]]
) -> None:
    daemon, _ = make_daemon(tmp_path)
    listed = within_deadline(lambda: daemon.list_sessions(ListSessionsParams()), hostile_dir[1])
    assert [Path(s.path).name for s in listed.sessions] == ["2026-01-01T00-00-00-000Z_real.jsonl"]


@pytest.mark.parametrize(("stem", "kind"), [
    ("fifo", "a FIFO"), ("zero", "a character device"), ("null", "a character device"),
    ("dir", "a directory"), ("sock", "a socket"),
])
def test_opening_anything_but_a_regular_file_is_not_a_session_and_never_blocks(
    tmp_path: Path, hostile_dir: tuple[Path, list[Path]], stem: str, kind: str
) -> None:
    daemon, _ = make_daemon(tmp_path)
    folder, fifos = hostile_dir

    def by_id() -> Any:
        return daemon.open_session(OpenSessionParams(session_id=stem))  # found by its file name

    def by_path() -> Any:
        return daemon.open_session(OpenSessionParams(path=str(next(folder.glob(f"*_{stem}.jsonl")))))

    for attempt in (by_path, by_id):
        with pytest.raises(NotASession, match=kind) as caught:
            within_deadline(attempt, fifos)
        assert caught.value.reason == "notASession" and REASON_CODES["notASession"] == -32010


def test_a_file_above_max_session_bytes_is_too_large_and_is_not_listed(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    (tmp_path / "sessions").mkdir()
    path = session_file(tmp_path / "sessions", "2026-01-01T00-00-00-000Z_big.jsonl")
    size = path.stat().st_size
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"maxSessionBytes": size - 1}}))
    with pytest.raises(TooLarge) as caught:
        daemon.open_session(OpenSessionParams(path=str(path)))
    assert caught.value.reason == "tooLarge" and REASON_CODES["tooLarge"] == -32008
    assert caught.value.data == {"path": str(path), "size": f"{size} bytes",
                                 "limit": f"daemon.maxSessionBytes is {size - 1}"}
    assert daemon.list_sessions(ListSessionsParams()).sessions == []
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"maxSessionBytes": size}}))
    assert daemon.open_session(OpenSessionParams(path=str(path))).entry_count > 0
    assert len(daemon.list_sessions(ListSessionsParams()).sessions) == 1


def test_the_line_limit_refuses_more_lines_than_it_allows(tmp_path: Path) -> None:
    check_line_count(tmp_path, 10, max_lines=10)
    with pytest.raises(TooLargeError, match="11 lines"):
        check_line_count(tmp_path, 11, max_lines=10)


def test_a_new_file_may_not_land_on_a_fifo(tmp_path: Path) -> None:
    check_new_file(tmp_path / "absent.jsonl")
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotASession, match="a FIFO"):
        check_new_file(fifo)


# ------------------------------------------------------------ NUL in cwd
def test_a_nul_byte_in_a_path_or_cwd_param_is_invalid_params(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    for call in (lambda: daemon.create_session(CreateSessionParams(cwd="/work\0/x")),
                 lambda: daemon.list_sessions(ListSessionsParams(cwd="/work\0/x")),
                 lambda: daemon.open_session(OpenSessionParams(path=str(tmp_path / "a\0.jsonl")))):
        with pytest.raises(InvalidParams, match="NUL byte"):
            call()


async def test_a_nul_byte_in_the_header_cwd_leaves_every_method_working(tmp_path: Path) -> None:
    path = session_file(tmp_path)
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["cwd"] = "/home/user\0/project"
    path.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    daemon, _ = make_daemon(tmp_path)
    info = daemon.open_session(OpenSessionParams(path=str(path)))
    assert any("NUL byte" in w.message for w in info.warnings)
    sid = info.session_id
    assert daemon.get_context(GetContextParams(session_id=sid)).messages
    assert daemon.get_stats(SessionParams(session_id=sid)).message_counts
    assert daemon.get_settings(GetSettingsParams(session_id=sid)).settings
    await daemon.append(AppendParams(session_id=sid, entries=[user("still writable")]))
    assert daemon.get_context(GetContextParams(session_id=sid)).messages[-1]["content"] == "still writable"


# ------------------------------------------------------- parent cycles
def _line(eid: str, parent: str | None, n: int) -> str:
    message = {"role": "user", "content": f"entry {eid}", "timestamp": n}
    return json.dumps({"type": "message", "id": eid, "parentId": parent,
                       "timestamp": f"2026-01-01T00:00:{n:02d}.000Z", "message": message})


def test_entries_on_a_parent_cycle_are_in_get_tree_even_when_the_leaf_is_one(tmp_path: Path) -> None:
    path = tmp_path / "cycle.jsonl"
    header = json.dumps({"type": "session", "version": 3, "id": "cyc", "timestamp": "2026-01-01T00:00:00.000Z",
                         "cwd": str(tmp_path)})
    lines = [header, _line("r0", None, 1), _line("u1", "r0", 2), _line("a1", "b2", 3), _line("b2", "a1", 4)]
    path.write_text("\n".join(lines) + "\n")
    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, path)
    tree = daemon.get_tree(GetTreeParams(session_id=sid))
    assert tree.leaf_id == "b2" and tree.total == 4
    assert [(n.id, n.parent_id, n.on_active_path) for n in tree.nodes] == [
        ("r0", None, False), ("u1", "r0", False), ("a1", "b2", True), ("b2", "a1", True)]
    assert [n.child_ids for n in tree.nodes] == [["u1"], [], ["b2"], ["a1"]]
    page = daemon.get_tree(GetTreeParams(session_id=sid, offset=2, limit=5))
    assert [n.id for n in page.nodes] == ["a1", "b2"]
    assert [m["content"] for m in daemon.get_context(GetContextParams(session_id=sid)).messages] == [
        "entry a1", "entry b2"]


async def test_a_new_session_file_never_replaces_a_fifo_at_its_name(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    info = daemon.create_session(CreateSessionParams(cwd=str(tmp_path)))
    assert info.path is not None
    Path(info.path).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(info.path)
    with pytest.raises(NotASession, match="a FIFO"):
        await daemon.append(AppendParams(session_id=info.session_id, entries=[user("first")]))
    assert Path(info.path).is_fifo()

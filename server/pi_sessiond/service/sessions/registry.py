"""The open sessions, keyed by ``sessionId``.

Invariants:
- A key is the header id, or, when another open session already uses that id,
  the id plus ``#2``, ``#3``… (the lowest free suffix).
- One file is open at most once: opening the same resolved path again returns
  the session already open under its key, also when two opens run at once in
  worker threads (the second waits for the first; ``rpc/offload.py``).
- Closing drops the session from memory; the store writes every entry when it
  is appended, so there is nothing left to flush.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.errors import InvalidParams, UnknownSession
from pi_sessiond.service.sessions.loading import LOAD_DELAY, Loading
from pi_sessiond.store.layout import session_dir, sessions_root
from pi_sessiond.store.listing import list_sessions
from pi_sessiond.store.openindex import SAVE_DELAY, cache_dir
from pi_sessiond.store.pathcheck import DEFAULT_MAX_SESSION_BYTES
from pi_sessiond.store.session import Session
from pi_sessiond.store.tailopen import TailRead, open_tail


@attrs.define(eq=False)
class OpenSession:
    """One open session and the daemon's per-session state.

    ``session`` is the whole session; for one opened tail-first
    (``service/sessions/loading.py``) reading it waits until the whole file is read.
    """

    key: str
    _session: Session | None = attrs.field(alias="session")
    loading: Loading | None = None
    turn_compacted: bool = False  # an automatic compaction ran in this turn (loop guard)
    overflow_attempted: bool = False  # Pi's "overflow recovery already attempted" flag
    auto_compaction_floor: int | None = None  # after pi/undo: no auto-compaction below this many tokens
    threshold_waiting: bool = False  # the threshold was crossed while the background draft ran (prepareAt)
    auto_count: int = 0  # automatic compactions started in this turn (compaction.autoPerTurn)
    auto_stalled: int | None = None  # loop guard: after a failed auto-compaction, none below this many tokens
    overflow_answered: str | None = None  # the compaction pi/reportOverflow last relied on (service.overflowing)

    @property
    def session(self) -> Session:
        session = self._session
        if session is None:
            loading = self.loading  # read once: a finished read sets _session, then clears loading
            session = self._session if loading is None else loading.wait()
            assert session is not None, "an open session without a session"
            self._session = session
        return session

    @property
    def loaded(self) -> bool:
        """Whether :attr:`session` is there without waiting."""
        return self.reading() is None

    def reading(self) -> Loading | None:
        """The whole-file read still to come or under way (``service/sessions/loading.py``), else ``None``.

        Read it once and keep it: another thread may finish the read meanwhile.
        """
        loading = self.loading
        return loading if self._session is None and loading is not None and not loading.done else None

    def peek(self) -> Session:
        """The session if it is loaded, else the tail's (header, path and the leaf's context only: never written)."""
        loading = self.reading()
        return loading.provisional if loading is not None else self.session


class Registry:
    """Open sessions by key and by file."""

    def __init__(
        self,
        sessions_dir: Path | None = None,
        max_bytes: Callable[[], int] | None = None,
        open_index: Callable[[], bool] | None = None,
        tail_open_bytes: Callable[[], int] | None = None,
    ) -> None:
        """``max_bytes`` gives ``daemon.maxSessionBytes`` now (settings may change); default 4 GiB.

        ``open_index`` gives ``daemon.openIndex`` now, ``tail_open_bytes``
        ``daemon.tailOpenBytes`` (defaults off: only the daemon turns them on).
        :attr:`on_loaded` is called when a session opened tail-first was read in full.
        """
        self.sessions_dir = sessions_dir
        self._max_bytes = max_bytes or (lambda: DEFAULT_MAX_SESSION_BYTES)
        self._open_index = open_index or (lambda: False)
        self._tail_open_bytes = tail_open_bytes or (lambda: 0)
        self.on_loaded: Callable[[OpenSession, Loading], None] = lambda opened, loading: None
        self.load_delay = LOAD_DELAY  # seconds after pi/openSession before a tail-first session is read in full
        self.in_blocks = False
        """Files are read a block at a time (``Session.open``): for a one-shot command that only appends
        (``cli/local.py``)."""
        self._lock = threading.Lock()  # keys and paths change atomically (opens run in worker threads)
        self._opening: dict[Path, threading.Lock] = {}  # one per file ever opened (a few bytes each)
        self._by_key: dict[str, OpenSession] = {}
        self._by_path: dict[Path, str] = {}

    def __iter__(self) -> Iterator[OpenSession]:
        return iter(list(self._by_key.values()))

    def __len__(self) -> int:
        return len(self._by_key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def get(self, key: str) -> OpenSession:
        """The open session ``key``; raises :class:`UnknownSession`."""
        found = self._by_key.get(key)
        if found is None:
            raise UnknownSession(f"no open session with sessionId {key!r}")
        return found

    def find(self, key: str) -> OpenSession | None:
        """The open session ``key``, or ``None``."""
        return self._by_key.get(key)

    def add(self, session: Session, loading: Loading | None = None) -> OpenSession:
        """Register a session under a free key (header id, then ``#2``, ``#3``…).

        With ``loading``, ``session`` is its provisional one (``service/sessions/loading.py``).
        """
        with self._lock:
            key = base = session.id
            n = 1
            while key in self._by_key:
                n += 1
                key = f"{base}#{n}"
            opened = OpenSession(key=key, session=None if loading is not None else session, loading=loading)
            self._by_key[key] = opened
            if session.path is not None:
                self._by_path[_resolved(session.path)] = key
            return opened

    def get_or_open(self, session_id: str | None, path: str | None) -> OpenSession:
        """The open ``session_id``, else the file ``path`` (opened if it is not), else :class:`InvalidParams`."""
        if session_id is not None:
            return self.get(session_id)
        if path is not None:
            return self.open_path(Path(path).expanduser())
        raise InvalidParams("path or sessionId: one of them is required")

    def open_path(self, path: Path) -> OpenSession:
        """Open ``path`` (or return it if it is open); an unreadable file is :class:`InvalidParams`.

        A symlink is opened at its target, so writes (the atomic v3 rewrite
        included) go to the real file and the link stays a link. Only regular
        files within ``daemon.maxSessionBytes`` are opened (``store/pathcheck.py``:
        a FIFO, device or directory is ``notASession``, never read).
        """
        check_no_nul("path", str(path))
        resolved = _resolved(path)
        with self._lock:
            opening = self._opening.setdefault(resolved, threading.Lock())
        with opening:  # a second open of the same file (another thread) waits, then finds it open
            found = self._open_at(resolved)
            if found is not None:
                return found
            try:
                tail = open_tail(resolved, self._max_bytes(), self._tail_open_bytes())
            except OSError as exc:
                raise _unreadable(path, exc) from exc
            if tail is None:
                return self.add(self._open_full(resolved, path))
            return self._add_loading(resolved, path, tail)

    def _open_full(self, resolved: Path, path: Path) -> Session:
        index_dir = cache_dir() if self._open_index() else None
        try:
            session = Session.open(resolved, max_bytes=self._max_bytes(), index_dir=index_dir,
                                   in_blocks=self.in_blocks)
        except OSError as exc:
            raise _unreadable(path, exc) from exc
        if session.pending_index is not None:  # saved in the background, once the first requests are served
            saver = threading.Timer(SAVE_DELAY, session.save_index)
            saver.daemon = True
            saver.start()
        return session

    def _add_loading(self, resolved: Path, path: Path, tail: TailRead) -> OpenSession:
        provisional = Session(tail.header, tail.tree, resolved)
        box: list[OpenSession] = []
        loading = Loading(tail, provisional, lambda: self._open_full(resolved, path),
                          lambda _: self._loaded(box[0]))
        opened = self.add(provisional, loading)
        box.append(opened)
        return opened  # pi/openSession starts the background read (Loading.start_later) once SESSION is made

    def _loaded(self, opened: OpenSession) -> None:
        """A tail-first session was read in full: a failed read drops it; then :attr:`on_loaded`."""
        loading = opened.loading
        assert loading is not None
        if loading.session is not None:  # the tail and the provisional session are no longer needed
            opened._session = loading.session
            opened.loading = None
            self.on_loaded(opened, loading)
            return
        if loading.error is not None:
            self._forget(opened, loading.provisional.path)
        self.on_loaded(opened, loading)

    def _open_at(self, resolved: Path) -> OpenSession | None:
        with self._lock:
            key = self._by_path.get(resolved)
            return self._by_key.get(key) if key is not None else None

    def open_id(self, session_id: str) -> OpenSession:
        """The open session ``session_id``, else the file of that id in the sessions directories."""
        found = self._by_key.get(session_id)
        if found is not None:
            return found
        check_session_id(session_id)  # it becomes part of a file pattern below
        for directory in self._search_dirs():
            for candidate in sorted(directory.glob(f"*_{session_id}.jsonl")):
                return self.open_path(candidate)
        raise UnknownSession(f"no session file with id {session_id!r}")

    def create(
        self, cwd: str, *, session_id: str | None = None, parent_session: str | None = None
    ) -> OpenSession:
        """A new session; its file (in the sessions directory) appears with the first user or assistant message."""
        if session_id is not None:
            check_session_id(session_id)  # it becomes part of the file name
        check_no_nul("cwd", cwd)
        directory = self.directory_for(cwd)
        session = Session.create(cwd, directory, session_id=session_id, parent_session=parent_session)
        return self.add(session)

    def close(self, key: str) -> OpenSession:
        """Drop ``key`` from memory; raises :class:`UnknownSession`. A session still loading is never read in full."""
        opened = self.get(key)
        loading, path = opened.reading(), opened.peek().path
        if loading is not None:
            loading.abandon()  # holds no lock yet
        else:
            opened.session.close()  # releases the write lock
        self._forget(opened, path)
        return opened

    def _forget(self, opened: OpenSession, path: Path | None) -> None:
        """Drop ``opened`` (at ``path``) from the keys and paths, unless another session took its place."""
        with self._lock:
            if self._by_key.get(opened.key) is opened:
                del self._by_key[opened.key]
            if path is not None and self._by_path.get(_resolved(path)) == opened.key:
                del self._by_path[_resolved(path)]

    def directory_for(self, cwd: str) -> Path:
        """Where new sessions of ``cwd`` go: ``sessionsDir`` if configured, else Pi's layout."""
        return self.sessions_dir if self.sessions_dir is not None else session_dir(cwd)

    def listing(self, cwd: str | None) -> list[JsonDict]:
        """Listing rows (store/listing) of ``cwd`` (or of every directory), newest first."""
        if cwd is not None:
            check_no_nul("cwd", cwd)
        rows: list[JsonDict] = []
        for directory in self._list_dirs(cwd):
            rows.extend(list_sessions(directory, self._max_bytes()))
        if cwd is not None and self.sessions_dir is not None:
            rows = [r for r in rows if r.get("cwd") == cwd]
        rows.sort(key=lambda r: str(r.get("modified") or ""), reverse=True)
        return rows

    def _list_dirs(self, cwd: str | None) -> list[Path]:
        if self.sessions_dir is not None or cwd is not None:
            return [self.directory_for(cwd or "")]
        root = sessions_root()
        return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []

    def _search_dirs(self) -> list[Path]:
        if self.sessions_dir is not None:
            return [self.sessions_dir]
        return self._list_dirs(None)


_SESSION_ID = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$")


def check_session_id(session_id: str) -> None:
    """Pi's id rule (letters, digits, ``.``, ``_``, ``-``; no separators, no ``..`` escapes)."""
    if not _SESSION_ID.match(session_id) or ".." in session_id:
        raise InvalidParams(
            f"sessionId: {session_id!r} is not a valid session id (letters, digits, '.', '_', '-'; at most 128)"
        )


def _unreadable(path: Path, exc: OSError) -> InvalidParams:
    return InvalidParams(f"cannot open {path}: {exc.strerror or exc}", data={"path": str(path)})


def check_no_nul(field: str, value: str) -> None:
    """A NUL byte cannot be in a path: :class:`InvalidParams` naming ``field``."""
    if "\0" in value:
        raise InvalidParams(f"{field}: a path cannot hold a NUL byte")


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return Path(os.path.abspath(path))


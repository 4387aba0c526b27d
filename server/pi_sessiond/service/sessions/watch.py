"""Which open sessions a live Pi holds: ``pi/sessionLive`` when that changes, ``pi/sessionChanged`` as Pi writes.

Contracts:
- The state of a session is the pid of the live Pi holding it
  (``livewriter.live_pi``: the lock body names ``pi``, a socket and a running
  pid), else ``None``. :meth:`LiveWatch.check` compares it with what was
  last announced: a session first seen live announces ``live: true``; one
  first seen not live announces nothing; any later change is announced.
- While Pi holds a session, growth of its file (Pi's appends) is folded in
  (``Session.refresh``: the leaf follows entries that continue it) and announced as
  ``pi/sessionChanged`` with reason ``external`` so editors refresh, and
  ``compaction.prepareAt`` may start a background draft for Pi's
  ``session_before_compact`` to reuse (``service.compacting.preparing``, through ``on_growth``).
- The polling task runs only inside an event loop (the daemon; not the
  in-process command line), is held by a strong reference and is cancelled by
  :meth:`LiveWatch.aclose`. Nothing here reads more than a lock body and a
  file's size.
- Work per event grows with the sessions that changed, not with those open:
  an open checks only the session it opened; each poll reads the lock body of
  a session only when its lock file's stat changed (the stats are taken in a
  worker thread, :mod:`.lockstat`), plus those a live Pi holds (its pid may
  exit and its file grow without the lock file changing).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable

import attrs

from pi_protocol import methods
from pi_protocol.live import SessionLive
from pi_protocol.results import SessionChanged
from pi_sessiond.errors import PiError
from pi_sessiond.service.interface import Notify
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.sessions.livewriter import live_pi
from pi_sessiond.service.sessions.lockstat import LockStats
from pi_sessiond.service.sessions.registry import OpenSession, Registry
from pi_sessiond.store import lockinfo

POLL_SECONDS = 1.0
log = logging.getLogger("pi_sessiond.service.sessions.watch")


@attrs.define
class _Seen:
    pid: int | None
    size: int


class LiveWatch:
    """Polls the open sessions' lock bodies (every ``interval`` seconds once started)."""

    def __init__(self, registry: Registry, jobs: JobManager, notify: Notify,
                 on_growth: Callable[[OpenSession], None], interval: float = POLL_SECONDS) -> None:
        """``on_growth`` runs after a live Pi's lines were folded into a session (no job reading it)."""
        self.registry, self.jobs, self.notify, self.on_growth = registry, jobs, notify, on_growth
        self.interval = interval
        self._seen: dict[str, _Seen] = {}
        self._stats = LockStats()
        self._due: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def bind(self) -> None:
        """Remember the running event loop (called on it, e.g. at ``initialize``), so that :meth:`soon`
        works from the worker threads heavy requests run in (``rpc/offload.py``)."""
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()

    def ensure_started(self) -> None:
        """Start polling when called inside a running event loop (once)."""
        if self._task is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._run())

    def soon(self, key: str | None = None) -> None:
        """Start polling and check session ``key`` (every open one when ``None``) right after the current
        request was answered.

        On the event loop directly; from a worker thread through the loop :meth:`bind` remembered;
        nowhere without a loop (the in-process command line).
        """
        if key is None:
            self._due.update(opened.key for opened in self.registry)
        else:
            self._due.add(key)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            loop = self._loop
            if loop is not None and not loop.is_closed():
                loop.call_soon_threadsafe(self._start_and_check)
            return
        self._start_and_check()

    def _start_and_check(self) -> None:
        self.ensure_started()
        if self._task is not None:
            asyncio.get_running_loop().call_soon(self._safe_check, set())  # the sessions soon() named

    def _safe_check(self, changed: set[str] | None) -> None:
        try:
            self.check(changed)
        except Exception:  # a bad session must not stop the watch
            log.exception("live-session check failed")

    def check(self, changed: set[str] | None = None) -> None:
        """Announce what changed since the last check: of the sessions in ``changed`` (every open one when
        ``None``), those :meth:`soon` named, and those a live Pi holds."""
        due, self._due = self._due, set()
        if changed is None:
            due.update(opened.key for opened in self.registry)
        else:
            due |= changed
        due.update(key for key, seen in self._seen.items() if seen.pid is not None)
        for key in due:
            opened = self.registry.find(key)
            if opened is None:
                self._seen.pop(key, None)
            else:
                self._check_one(key, opened)

    def _check_one(self, key: str, opened: OpenSession) -> None:
        path = opened.peek().path
        if path is None:
            return
        body = live_pi(path)
        pid = body.pid if body is not None else None
        size = _size(path)
        before = self._seen.get(key)
        self._seen[key] = _Seen(pid, size)
        if (before is None and pid is not None) or (before is not None and before.pid != pid):
            holder = lockinfo.holder_of(body)
            self.notify(methods.SESSION_LIVE, SessionLive(session_id=key, path=str(path), live=pid is not None,
                                                               holder=holder))
        elif before is not None and pid is not None and size != before.size:
            self._followed(key, opened)

    def _followed(self, key: str, opened: OpenSession) -> None:
        """Fold in what Pi appended (when no job is reading the session) and tell editors to refresh.

        A session still loading (``service/sessions/loading.py``) is left alone: its whole-file read sees the growth.
        """
        if not opened.loaded:
            return
        if self.jobs.get(key) is None:
            try:
                opened.session.refresh()
                self.on_growth(opened)
            except PiError as exc:
                log.info("could not follow %s: %s", key, exc.message)
        leaf = opened.session.leaf_id
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=key, leaf_id=leaf, reason="external"))

    async def _run(self) -> None:
        self._safe_check(None)
        while True:
            await asyncio.sleep(self.interval)
            paths = {opened.key: opened.peek().path for opened in self.registry}
            changed = await asyncio.to_thread(self._stats.changed, paths)
            for key in set(self._seen) - paths.keys():
                del self._seen[key]
            self._safe_check(changed)

    async def aclose(self) -> None:
        """Stop polling."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def _size(path: os.PathLike[str]) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return -1

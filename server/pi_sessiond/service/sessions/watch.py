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

    def soon(self) -> None:
        """Start polling and check once right after the current request was answered.

        On the event loop directly; from a worker thread through the loop :meth:`bind` remembered;
        nowhere without a loop (the in-process command line).
        """
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
            asyncio.get_running_loop().call_soon(self._safe_check)

    def _safe_check(self) -> None:
        try:
            self.check()
        except Exception:  # a bad session must not stop the watch
            log.exception("live-session check failed")

    def check(self) -> None:
        """Announce what changed since the last check."""
        open_now = {opened.key: opened for opened in self.registry}
        for key in set(self._seen) - set(open_now):
            del self._seen[key]
        for key, opened in open_now.items():
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
        while True:
            self._safe_check()
            await asyncio.sleep(self.interval)

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

"""One daemon, many clients: the connections of one listener share its open sessions.

Rules:
- Every connection's :class:`SharedDaemon` uses one registry of open sessions
  and one job table, so a second client opening a file the
  daemon holds gets the same session (and ``sessionId``) and may append to it:
  the session lock keeps other processes out, never the daemon's own clients.
- A connection holds each session it opened, created or forked. A
  notification about a session goes to every connection holding it and to the
  connection whose request caused it; one about no session to the latter only.
- ``pi/closeSession`` and a connection's end release the connection's hold;
  a session is closed (its job cancelled) once no connection holds it.
- Settings layers, hooks, progress bars and drafts stay per connection: a job
  uses those of the connection whose request started it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from pi_protocol import methods
from pi_protocol.params import CreateSessionParams, ForkParams, OpenSessionParams, SessionParams
from pi_protocol.results import SessionInfo
from pi_sessiond.service.daemon import HANDLERS, Daemon
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.sessions.registry import Registry
from pi_sessiond.service.settings_store import SettingsStore


class SharedSessions:
    """What the connections of one daemon process share (sessions, jobs), and who holds which session."""

    def __init__(self, sessions_dir: Path | None = None) -> None:
        daemon_wide = SettingsStore()  # daemon.* is global-only: the default and global layers decide it
        self.registry = Registry(
            sessions_dir,
            lambda: daemon_wide.settings().daemon.max_session_bytes,
            lambda: daemon_wide.settings().daemon.open_index,
            lambda: daemon_wide.settings().daemon.tail_open_bytes,
        )
        self.jobs = JobManager(lambda: daemon_wide.settings().daemon.max_concurrent_summaries)
        self._sinks: dict[int, EventSink] = {}
        self._holders: dict[str, set[int]] = {}
        self._next = 0

    def daemon_factory(self, events: EventSink, hooks: HookClient, progress: ProgressFactory) -> SharedDaemon:
        """A connection's daemon (``app.make_server``'s ``daemon_factory``)."""
        return SharedDaemon(self, events=events, hooks=hooks, progress=progress)

    @staticmethod
    def handlers() -> Mapping[str, Callable[..., Any]]:
        """The method table's handlers with :class:`SharedDaemon`'s holds (``app.make_server``'s ``handlers``)."""
        return SHARED_HANDLERS

    # ------------------------------------------------------------ members
    def join(self, sink: EventSink) -> int:
        self._next += 1
        self._sinks[self._next] = sink
        return self._next

    def hold(self, member: int, key: str) -> None:
        self._holders.setdefault(key, set()).add(member)

    def release(self, member: int, key: str) -> bool:
        """Drop ``member``'s hold on ``key``; whether nobody holds it any more."""
        holders = self._holders.get(key, set())
        holders.discard(member)
        if holders:
            return False
        self._holders.pop(key, None)
        return True

    def leave(self, member: int) -> list[str]:
        """Drop every hold of ``member``; the sessions nobody holds any more."""
        self._sinks.pop(member, None)
        return [key for key in list(self._holders) if member in self._holders[key] and self.release(member, key)]

    def broadcast(self, origin: int, method: str, payload: Any) -> None:
        """Send to the holders of the payload's session and to ``origin`` (see the module docstring)."""
        key = payload.get("sessionId") if isinstance(payload, dict) else None
        targets = set(self._holders.get(key, ())) if isinstance(key, str) else set()
        targets.add(origin)
        for member in sorted(targets):
            sink = self._sinks.get(member)
            if sink is not None:
                sink.notify(method, payload)


class _MemberSink:
    """A connection's event sink: its notifications go out through :meth:`SharedSessions.broadcast`."""

    def __init__(self, shared: SharedSessions, member: Callable[[], int]) -> None:
        self._shared, self._member = shared, member

    def notify(self, method: str, payload: Any) -> None:
        self._shared.broadcast(self._member(), method, payload)


class SharedDaemon(Daemon):
    """A connection's :class:`Daemon` over the shared sessions (see the module docstring)."""

    def __init__(self, shared: SharedSessions, *, events: EventSink, hooks: HookClient,
                 progress: ProgressFactory) -> None:
        self._shared = shared
        self._member = shared.join(events)
        super().__init__(events=_MemberSink(shared, lambda: self._member), hooks=hooks,
                         sessions_dir=shared.registry.sessions_dir, progress=progress, registry=shared.registry,
                         jobs=shared.jobs)

    def create_session(self, params: CreateSessionParams) -> SessionInfo:
        return self._held(super().create_session(params))

    def open_session(self, params: OpenSessionParams) -> SessionInfo:
        return self._held(super().open_session(params))

    def fork(self, params: ForkParams) -> SessionInfo:
        return self._held(super().fork(params))

    async def close_session(self, params: SessionParams) -> None:
        """``pi/closeSession``: release this connection's hold; close it once nobody holds it."""
        opened = self.registry.get(params.session_id)
        self.settings.forget(opened.key)
        if self._shared.release(self._member, opened.key):
            await super().close_session(params)

    async def aclose(self) -> None:
        """The connection ended: release its holds; close (and cancel the jobs of) sessions nobody holds."""
        await self.live_watch.aclose()
        self._idle_locks.cancel()
        for key in self._shared.leave(self._member):
            await self.jobs.cancel(key)
            if key in self.registry:
                self.registry.close(key)
                self.summarizers.recorded.forget(key)

    def _held(self, info: SessionInfo) -> SessionInfo:
        self._shared.hold(self._member, info.session_id)
        return info


SHARED_HANDLERS: Final[Mapping[str, Callable[..., Any]]] = MappingProxyType({
    **HANDLERS,
    methods.CREATE_SESSION: SharedDaemon.create_session,
    methods.OPEN_SESSION: SharedDaemon.open_session,
    methods.FORK: SharedDaemon.fork,
    methods.CLOSE_SESSION: SharedDaemon.close_session,
})

"""Releasing the write locks of sessions that stopped writing (``daemon.lockIdleSeconds``).

Contracts (the lock is ``<file>.lock`` beside the session file, ``flock``-ed):
- A session whose daemon did not write for ``daemon.lockIdleSeconds`` (per
  session settings; ``null``: never) drops its lock, so another program (a
  Pi with the extension, the CLI, another daemon) may take it; the store
  retakes it before our next write, or answers ``locked`` if someone else
  holds it then.
- A session with a running job keeps its lock (its commit follows).
- The sweep runs on the event loop: armed by every request that touches a
  session (:meth:`IdleLocks.arm`), it re-arms itself while any lock is held
  and stops when none is, so an idle daemon has no timer.
- A sweep looks only at the sessions armed since they last held no lock, not
  at every open one: its cost follows the sessions that wrote.
"""

from __future__ import annotations

import asyncio
import logging

from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.sessions.registry import Registry
from pi_sessiond.service.sessions.scope import scope_of
from pi_sessiond.service.settings_store import SettingsStore

log = logging.getLogger("pi_sessiond.service.sessions.idlelocks")
MIN_PERIOD = 0.05  # seconds between sweeps at the least


class IdleLocks:
    """The sweep timer of one daemon."""

    def __init__(self, registry: Registry, settings: SettingsStore, jobs: JobManager) -> None:
        self._registry, self._settings, self._jobs = registry, settings, jobs
        self._timer: asyncio.TimerHandle | None = None
        self._armed: set[str] = set()  # the sessions that may hold a lock

    def arm(self, key: str | None = None) -> None:
        """Make sure a sweep is scheduled that looks at session ``key`` (every open one when ``None``);
        a no-op outside an event loop. The session need not be open yet."""
        if key is None:
            self._armed.update(opened.key for opened in self._registry)
        else:
            self._armed.add(key)
        if self._timer is not None:
            return
        idle = self._settings.settings().daemon.lock_idle_seconds
        if idle is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(max(idle / 4, MIN_PERIOD), self.sweep)

    def sweep(self) -> int:
        """Release the locks idle long enough; re-arm while any is still held. Returns how many were released."""
        self._timer = None
        released, still = 0, set()
        armed, self._armed = self._armed, set()  # worker threads may arm meanwhile
        for key in armed:
            opened = self._registry.find(key)
            if opened is None or not opened.loaded:  # closed, or still read in full (loading.py): no lock
                continue
            session = opened.session
            idle = scope_of(self._settings, opened).settings.daemon.lock_idle_seconds
            if idle is not None and self._jobs.get(opened.key) is None and session.release_if_idle(idle):
                released += 1
                log.info("released the write lock of %s after %s s without writes", opened.key, idle)
            if session.holds_lock:
                still.add(key)
        for key in still:
            self.arm(key)
        return released

    def cancel(self) -> None:
        """Stop the timer (the daemon is closing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

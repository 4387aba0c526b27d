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

    def arm(self) -> None:
        """Make sure a sweep is scheduled (a no-op outside an event loop or when one is)."""
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
        released, held = 0, False
        for opened in self._registry:
            if not opened.loaded:  # still being read (service/sessions/loading.py): it holds no lock yet
                continue
            session = opened.session
            idle = scope_of(self._settings, opened).settings.daemon.lock_idle_seconds
            if idle is not None and self._jobs.get(opened.key) is None and session.release_if_idle(idle):
                released += 1
                log.info("released the write lock of %s after %s s without writes", opened.key, idle)
            held = held or session.holds_lock
        if held:
            self.arm()
        return released

    def cancel(self) -> None:
        """Stop the timer (the daemon is closing)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

"""Only the sessions used last keep their parsed messages; the others keep their file's bytes and tree.

Invariants:
- :meth:`Shedder.touch` marks a session used (every request that names one).
  Beyond the :data:`KEEP_PARSED` used last, a session is shed
  (``Session.shed``): its parsed entry bodies and leaf context are dropped and
  parsed again from the bytes on its next use, with the same results.
- A session with a running job, one still being read in full, or one whose
  lock a reader holds right now is not shed this time.
- Safe from worker threads: the table has its own lock, and a session is shed
  outside it, without waiting for the session's lock (no lock order to keep).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable

from pi_sessiond.service.sessions.registry import OpenSession

KEEP_PARSED = 32


class Shedder:
    """The sessions used last, most recent at the end."""

    def __init__(self, busy: Callable[[str], bool], keep: int = KEEP_PARSED) -> None:
        self._busy = busy
        self._keep = keep
        self._used: OrderedDict[str, OpenSession] = OrderedDict()
        self._lock = threading.Lock()

    def touch(self, opened: OpenSession) -> None:
        """``opened`` was just used: it keeps its parsed state; the least recently used beyond the limit shed it."""
        with self._lock:
            self._used[opened.key] = opened
            self._used.move_to_end(opened.key)
            victims = [self._used.popitem(last=False)[1] for _ in range(len(self._used) - self._keep)]
        for victim in victims:
            self._shed(victim)

    def _shed(self, opened: OpenSession) -> None:
        if not opened.loaded or self._busy(opened.key):
            return
        session = opened.session
        if session.lock.acquire(blocking=False):
            try:
                session.shed()
            finally:
                session.lock.release()

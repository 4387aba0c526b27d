"""Sessions opened tail-first (``store/tailopen.py``): the leaf's context now, the whole file soon after.

Contract:

- ``Registry.open_path`` registers a file of ``daemon.tailOpenBytes`` or more
  as soon as its end gives the leaf's context; the open session's
  :attr:`~pi_sessiond.service.sessions.registry.OpenSession.loading` is a :class:`Loading`
  and SESSION says ``loading: true`` (``entryCount`` and ``warnings`` then
  cover only the lines read so far).
- Until the whole file is read, ``pi/getContext`` of that leaf (no ``leafId``,
  or the leaf's id) is answered from the tail (:meth:`Loading.early_context`).
  Any other use of the session (``OpenSession.session``) waits for the whole
  file: :meth:`Loading.wait` reads it in full (``Session.open``, through the
  open index when one applies) in the first thread that needs it; the rpc layer
  makes that a worker thread, and a timer started once SESSION is made starts
  it :data:`LOAD_DELAY` later when nobody asked sooner.
- Once it is read, :func:`outcome` compares: ``pi/sessionLoaded`` follows with
  the real ``entryCount`` and ``warnings``, and when the leaf or its context is
  not what the tail gave (the thinking level was guessed wrong, or another
  program appended meanwhile), ``contextChanged`` is true and a
  ``pi/sessionChanged`` with reason ``loaded`` goes out too.
- A full read that fails (the file was removed, replaced by something that is
  not a session, or has too many lines) drops the session; waiting requests get
  that error, and ``pi/sessionLoaded`` carries it.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

from pi_protocol import methods
from pi_protocol.results import SessionChanged, SessionLoaded
from pi_protocol.session import SessionWarning
from pi_sessiond.errors import PiError, UnknownSession
from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.session import Session
from pi_sessiond.store.tailopen import STATS, TailRead

log = logging.getLogger(__name__)

LOAD_DELAY = 0.25
"""Seconds after a tail-first open before the whole file is read in the background, if nobody needs it sooner."""


class Loading:
    """The whole-file read of one session opened tail-first (see the module docstring)."""

    def __init__(self, tail: TailRead, provisional: Session, load: Callable[[], Session],
                 on_done: Callable[[Loading], None]) -> None:
        self.tail = tail
        self.provisional = provisional  # the header and the tail's entries: never written
        self.session: Session | None = None
        self.error: Exception | None = None
        self.served: SessionContext | None = None  # the early context, once a client got it
        self.closed = False
        self._timer: threading.Timer | None = None
        self._load = load
        self._on_done = on_done
        self._lock = threading.Lock()  # one whole-file read
        self._served_lock = threading.Lock()  # an early answer and the comparison after the read

    @property
    def done(self) -> bool:
        """Whether the whole file was read (or its read failed)."""
        return self.session is not None or self.error is not None

    @property
    def leaf_id(self) -> str | None:
        return self.provisional.leaf_id

    def early_context(self, leaf_id: str | None) -> SessionContext | None:
        """The context of ``leaf_id`` (``None``: the leaf) from the tail; ``None`` once the file is read."""
        if leaf_id is not None and leaf_id != self.leaf_id:
            return None
        with self._served_lock:
            if self.done:
                return None
            if self.served is None:
                self.served = self.tail.context(self.provisional.context())
            return self.served

    def wait(self) -> Session:
        """The session read in full (read now in this thread if nobody has started); raises the read's error."""
        with self._lock:
            if not self.done:
                self._read()
        if self.error is not None:
            raise self.error
        assert self.session is not None
        return self.session

    def _read(self) -> None:
        if self.closed:
            self.error = UnknownSession("the session was closed before it was read in full")
            return
        try:
            session = self._load()
        except Exception as exc:
            self.error = exc
        else:
            if self.closed:  # closed while it was being read: nobody is left to use it
                session.close()
                self.error = UnknownSession("the session was closed before it was read in full")
                return
            with self._served_lock:
                self.session = session
        self._on_done(self)
        STATS["loaded"] += 1  # after the notifications: debug/stats readers see them sent

    def abandon(self) -> None:
        """The session was closed: a read in progress is dropped when it ends, and none starts."""
        self.closed = True

    def start_later(self, delay: float = LOAD_DELAY) -> None:
        """Read the whole file in a background thread ``delay`` seconds from now (unless done by then; once)."""
        with self._served_lock:
            if self._timer is not None:
                return
            self._timer = threading.Timer(delay, self._background)
        self._timer.daemon = True
        self._timer.start()

    def _background(self) -> None:
        with contextlib.suppress(Exception):  # reported through on_done; nobody waits here
            self.wait()


def outcome(loading: Loading, session: Session) -> bool:
    """Whether the leaf or its context differ from what the tail gave (a client must fetch it again)."""
    if session.leaf_id != loading.leaf_id:
        return True
    served = loading.served
    if served is None:
        return False
    full = session.context()
    return (full.thinking_level, full.model) != (served.thinking_level, served.model) or list(
        full.messages) != list(served.messages)


def announce(notify: Callable[[str, Any], None], key: str, loading: Loading) -> None:
    """Tell the client a tail-first session was read in full (``pi/sessionLoaded``, maybe ``pi/sessionChanged``)."""
    assert loading.done
    if loading.session is None:
        error = loading.error
        message = error.message if isinstance(error, PiError) else str(error)
        log.info("could not read %s in full: %s", key, message)
        notify(methods.SESSION_LOADED, SessionLoaded(session_id=key, leaf_id=loading.leaf_id, error=message))
        return
    session = loading.session
    changed = outcome(loading, session)
    if changed and loading.served is not None:
        log.info("%s: the context served while loading changed once the whole file was read", key)
    warnings = [SessionWarning(line=w.line, message=w.message) for w in session.warnings]
    notify(methods.SESSION_LOADED, SessionLoaded(session_id=key, leaf_id=session.leaf_id,
                                                 entry_count=len(session.entries), warnings=warnings,
                                                 context_changed=changed))
    if changed:
        notify(methods.SESSION_CHANGED, SessionChanged(session_id=key, leaf_id=session.leaf_id,
                                                       reason="loaded"))

"""The ``liveWriter`` guard: no summary or leaf move on a session another program is writing.

Contracts:
- Plain appends (``pi/append``) never pass through here: they are always
  accepted and folded in beside the other writer's lines.
- Operations that add a summary or move the leaf (compaction of any reason,
  navigation with a summary or a label) call :func:`check_live_writer` before
  anything runs (no summarizer is asked): the other writer's new lines are
  folded in first, then, if another program appended within
  ``daemon.liveWriterSeconds`` (``0`` turns the guard off), the request is
  refused with :class:`LiveWriter`, ``data.lastForeignAppend`` the time of
  that append, unless ``force`` is set; the write then lands on the newest
  leaf (the store's fold-in and the pipeline's leaf re-check).
- "Another program" is judged by the store (``store/guard.py``): growth we
  did not cause, and at open a recent newest entry not written by a lock
  holder (our own writes, or an exited ``pi`` holder's, do not count).
- A session held by a live Pi through the extension (:func:`live_pi`) is not
  written by us at all: ``pi/compact`` is forwarded to Pi (``forwarding``),
  and what Pi's extension API cannot do is refused by :func:`refuse` with
  ``holder`` and ``piCommand`` (what to type in Pi) in ``data``.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from pi_protocol import unstructure
from pi_protocol.live import LockBody
from pi_sessiond.errors import LiveWriter
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.store import lockinfo


def check_live_writer(scope: Scope, *, force: bool, action: str) -> None:
    """Fold in other writers' lines; :class:`LiveWriter` if one appended lately and not ``force``.

    ``action`` names the operation in the message ("compact", "navigate with a summary").
    """
    session = scope.session
    session.refresh()
    window = scope.settings.daemon.live_writer_seconds
    last = session.last_foreign_append
    if force or last is None or window <= 0:
        return
    age = time.time() - last
    if age > window:
        return
    raise LiveWriter(
        f"another program (a running Pi?) appended to {session.path or scope.key} {max(age, 0):.0f} s ago; "
        f"to {action} now could leave its next turns on a side branch. Close the session in Pi (or install "
        "the pi-sessiond Pi extension so Pi does it), or retry with force (CLI --force) to write on the "
        "newest leaf",
        data={"lastForeignAppend": _iso(last), "liveWriterSeconds": window},
    )


def live_pi(path: Path | None) -> LockBody | None:
    """The lock body of the live Pi holding ``path``, or ``None``."""
    if path is None:
        return None
    body = lockinfo.read_body(lockinfo.lock_path(path))
    if body is None or body.program != "pi" or not body.socket or not lockinfo.pid_alive(body.pid):
        return None
    return body


def refuse(body: LockBody, what: str, pi_command: str) -> LiveWriter:
    """:class:`LiveWriter` for an operation only Pi can do while it holds the session."""
    return LiveWriter(
        f"Pi (pid {body.pid}) has this session open; {what} there: type {pi_command} in Pi",
        data={"holder": unstructure(lockinfo.holder_of(body)), "piCommand": pi_command},
    )


def _iso(epoch: float) -> str:
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

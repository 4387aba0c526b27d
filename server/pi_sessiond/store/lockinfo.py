"""The body of a session's ``<file>.lock``: who holds the write lock.

Contracts:
- The body is one JSON line ``{pid, program, since, socket?}``
  (:class:`~pi_protocol.live.LockBody`), written by the holder right after it
  took the ``flock`` and rewritten in place (truncate, write, flush) whenever it
  changes. ``program`` is ``pi-sessiond`` (a daemon or the CLI) or ``pi`` (a
  live Pi, through ``pi-sessiond hold-lock``).
- Readers never need the lock: :func:`read_body` returns ``None`` for an
  empty, torn or foreign body instead of failing, since the holder may be
  writing it at that moment or be an older version that wrote none.
- The forwarding socket of a live Pi lives in the socket directory
  (:func:`socket_dir`), never beside the session file (path length limits);
  its name is a hash of the session's absolute path (:func:`pi_socket_path`).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import IO

from pi_protocol import structure, unstructure
from pi_protocol.converter import StructureError
from pi_protocol.live import LockBody, LockHolder
from pi_sessiond.store.layout import now_iso, runtime_dir

PROGRAM = "pi-sessiond"
MAX_BODY_BYTES = 4096  # a body is one short line; more is not a lock body


def lock_path(session_path: Path) -> Path:
    """``<file>.lock`` beside the session file."""
    return session_path.with_name(session_path.name + ".lock")


def body_for(program: str = PROGRAM, *, pid: int | None = None, socket: str | None = None) -> LockBody:
    """The body this process writes: its pid (or ``pid``), ``program``, the time now, ``socket``."""
    return LockBody(pid=os.getpid() if pid is None else pid, program=program, since=now_iso(), socket=socket)


def write_body(handle: IO[bytes], body: LockBody) -> None:
    """Replace the body of the lock file ``handle`` (held by this process) with ``body``."""
    line = json.dumps(unstructure(body), separators=(",", ":")).encode() + b"\n"
    handle.seek(0)
    handle.truncate(0)
    handle.write(line)
    handle.flush()


def read_body(path: Path) -> LockBody | None:
    """The body of the lock file ``path``; ``None`` when it is missing, empty, torn or not ours."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_BODY_BYTES)
    except OSError:
        return None
    try:
        data = json.loads(raw.split(b"\n", 1)[0])
        return structure(data, LockBody) if isinstance(data, dict) else None
    except (ValueError, StructureError):
        return None


def holder_of(body: LockBody | None) -> LockHolder | None:
    """The ``holder`` an error or ``pi/sessionLive`` names for ``body``."""
    if body is None:
        return None
    return LockHolder(pid=body.pid, program=body.program, socket=body.socket)


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user counts as alive)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def socket_dir() -> Path:
    """``$XDG_RUNTIME_DIR/pi-sessiond`` (else ``/tmp/pi-sessiond-<uid>``): the daemon's and live Pis' sockets."""
    return runtime_dir()


def pi_socket_path(session_path: Path) -> Path:
    """Where a live Pi holding ``session_path`` accepts forwarded requests."""
    digest = hashlib.sha256(str(session_path.absolute()).encode()).hexdigest()[:16]
    return socket_dir() / f"pi-{digest}.sock"

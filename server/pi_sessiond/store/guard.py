"""Guarding a session file against other writers.

- **Lock**: before its first write, a session takes an advisory ``fcntl`` lock
  on the sidecar ``<file>.lock`` (a separate file, so it survives the atomic
  v3 rewrite) and keeps it until the session is closed. Another process (a
  second daemon, the CLI, a live Pi through ``pi-sessiond hold-lock``) that
  wants to write the same file gets :class:`LockedError`, whose ``data.holder``
  names the holder from the lock's body (``store.lockinfo``); the holder writes
  that body right after taking the lock. Reading never needs the lock.
- **Growth**: Pi itself takes no lock. Before each write the file's identity
  and size are compared with what we last saw: lines another writer appended
  are read and folded in (never overwritten); a file that shrank or was
  replaced is :class:`ChangedUnderneathError` — reopen it, nothing is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path
from typing import IO

from pi_protocol import unstructure
from pi_sessiond.errors import Conflict, Locked
from pi_sessiond.store import lockinfo
from pi_sessiond.store.files import remove_stale_temps


class LockedError(Locked):
    """Another process holds the session's write lock; ``data.holder`` is ``{pid, program, socket?}`` when known."""


class ChangedUnderneathError(Conflict):
    """The file shrank or was replaced by another program since we read it."""


class FileGuard:
    """The write lock and the last seen (inode, size) of one session file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[bytes] | None = None
        self._ino: int | None = None
        self._size = 0

    def seen(self) -> None:
        """Remember the file as it is now (after reading or writing it)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._ino, self._size = None, 0
            return
        self._ino, self._size = st.st_ino, st.st_size

    def lock(self) -> None:
        """Take the write lock (once); :class:`LockedError` if another process holds it."""
        if self._lock is not None:
            return
        lock_path = lockinfo.lock_path(self.path)
        handle = open(lock_path, "a+b")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise locked_error(self.path) from None
        self._lock = handle
        lockinfo.write_body(handle, lockinfo.body_for())
        remove_stale_temps(self.path)  # only the lock holder may; a killed rewrite leaves one

    def release(self) -> None:
        """Drop the write lock."""
        if self._lock is not None:
            with contextlib.suppress(OSError):
                self._lock.close()
            self._lock = None

    def appended_by_others(self) -> bytes:
        """Bytes another writer appended since :meth:`seen` (``b""`` if none).

        Raises :class:`ChangedUnderneathError` when the file shrank or was replaced.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._ino is None:
                return b""
            raise ChangedUnderneathError(f"{self.path} was removed since it was opened; reopen it") from None
        if self._ino is None or (st.st_ino == self._ino and st.st_size == self._size):
            return b""
        if st.st_ino != self._ino or st.st_size < self._size:
            raise ChangedUnderneathError(f"{self.path} was replaced or shortened by another program; reopen it")
        with open(self.path, "rb") as fh:
            fh.seek(self._size)
            tail = fh.read(st.st_size - self._size)
        self._size += len(tail)
        return tail


def locked_error(path: Path) -> LockedError:
    """The refusal for ``path``, naming the holder its lock's body records (``data.holder``)."""
    lock_path = lockinfo.lock_path(path)
    holder = lockinfo.holder_of(lockinfo.read_body(lock_path))
    if holder is None:
        return LockedError(f"{path} is being written by another process (lock {lock_path.name})")
    who = "Pi" if holder.program == "pi" else holder.program
    return LockedError(
        f"{path} is being written by another process: {who} (pid {holder.pid}; lock {lock_path.name})",
        data={"holder": unstructure(holder)},
    )

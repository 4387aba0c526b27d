"""Guarding a session file against other writers.

- **Lock**: before its first write, a session takes an advisory ``fcntl`` lock
  on the sidecar ``<file>.lock`` (a separate file, so it survives the atomic
  v3 rewrite). Another process (a second daemon, the CLI, a live Pi through
  ``pi-sessiond hold-lock``) that wants to write the same file gets
  :class:`LockedError`, whose ``data.holder`` names the holder from the lock's
  body (``store.lockinfo``); the holder writes that body right after taking the
  lock. Reading never needs the lock.
  Before each write the lock is re-checked (:meth:`FileGuard.lock`): a lock
  file deleted or replaced since we took it is retaken at its path (or
  :class:`LockedError` if someone else holds the new one), and a session file
  with a second hard link is refused (another name has another lock file).
  A holder that did not write for ``daemon.lockIdleSeconds`` releases the
  lock (:meth:`FileGuard.release_if_idle`) and retakes it before its next write.
- **Offsets**: ``offset`` is how far we accounted for the file: lines we
  parsed and lines we wrote. It only ever moves over whole lines, and is never
  re-read from the file's size after our own write, so what another writer
  appended just before our bytes is still read (:meth:`FileGuard.wrote`).
- **Growth**: Pi itself takes no lock. Bytes past ``offset`` were appended by
  another program: :meth:`FileGuard.appended_by_others` returns their whole
  lines (a torn last line stays unread until its newline arrives); a file that
  shrank or was replaced is :class:`ChangedUnderneathError` — reopen it.
- **Foreign appends** (for the ``liveWriter`` guard): the file's mtime when
  it grew past what we accounted for; at open, the file's mtime and its newest
  entry's time when both are recent, unless the last write was a lock
  holder's: the lock file's mtime is set to the session file's after each of
  our writes (and noted in ``store/writemarks.py`` at release, since the
  lock file goes then), and a holder whose recorded pid is gone (a Pi with the extension that
  was closed or killed, a killed daemon) wrote the rest.
- **Nothing left behind**: releasing the lock removes the lock file (while
  still holding it); a lock file left by a process that died is taken over and
  removed at its next release. Whoever takes the lock checks, after the
  ``flock``, that the path still names the file it locked, and retries if not.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from pathlib import Path
from typing import IO

from pi_protocol import unstructure
from pi_sessiond.errors import Conflict, Locked
from pi_sessiond.store import lockinfo, writemarks
from pi_sessiond.store.files import remove_stale_temps


class LockedError(Locked):
    """Another process holds the session's write lock; ``data.holder`` is ``{pid, program, socket?}`` when known."""


class ChangedUnderneathError(Conflict):
    """The file shrank or was replaced by another program since we read it."""


def lock_path_of(path: Path) -> Path:
    """The sidecar lock file of the session file ``path``."""
    return lockinfo.lock_path(path)


class FileGuard:
    """The write lock, the offset we accounted for and the foreign appends of one session file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[bytes] | None = None
        self._ino: int | None = None
        self.offset = 0
        self._mtime_ns = 0
        self.last_foreign_ns: int | None = None
        self._last_write = time.monotonic()
        self._ours: tuple[int, int, int] | None = None

    @property
    def locked(self) -> bool:
        """Whether we hold the write lock now."""
        return self._lock is not None

    # ------------------------------------------------------------ accounting
    def opened(self, newest_entry_ns: int | None) -> None:
        """Account for the whole file as just read; judge whether its last append was foreign."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            self._ino, self.offset = None, 0
            return
        self._ino, self.offset, self._mtime_ns = st.st_ino, st.st_size, st.st_mtime_ns
        if newest_entry_ns is not None and st.st_size > 0 and not _written_by_holder(self.path, st):
            self.last_foreign_ns = min(st.st_mtime_ns, newest_entry_ns)

    def rewrote(self) -> None:
        """We just wrote the whole file (a new file, or the v3 rewrite): all of it is ours."""
        st = os.stat(self.path)
        self._ino, self.offset, self._mtime_ns = st.st_ino, st.st_size, st.st_mtime_ns
        self._mark_ours(st)

    def wrote(self, start: int, length: int) -> bytes:
        """We appended ``length`` bytes at ``start``; returns the bytes another writer put before them.

        Those bytes (``offset`` .. ``start``) were appended by another program
        between our last read and our write; the caller folds them in.
        """
        gap = b""
        if start > self.offset:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                gap = fh.read(start - self.offset)
            self._foreign(os.stat(self.path).st_mtime_ns)
        self.offset = start + length
        st = os.stat(self.path)
        if st.st_size == self.offset:
            self._mtime_ns = st.st_mtime_ns
            self._mark_ours(st)
        self._last_write = time.monotonic()
        return gap

    def appended_by_others(self) -> tuple[bytes, bool]:
        """The whole lines another writer appended past ``offset``, and whether a torn line follows them.

        ``offset`` moves past the returned lines. Raises
        :class:`ChangedUnderneathError` when the file shrank or was replaced.
        """
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self._ino is None:
                return b"", False
            raise ChangedUnderneathError(f"{self.path} was removed since it was opened; reopen it") from None
        if self._ino is None or (st.st_ino == self._ino and st.st_size == self.offset):
            return b"", False
        if st.st_ino != self._ino or st.st_size < self.offset:
            raise ChangedUnderneathError(f"{self.path} was replaced or shortened by another program; reopen it")
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            tail = fh.read(st.st_size - self.offset)
        self._foreign(st.st_mtime_ns)
        whole = tail[: tail.rfind(b"\n") + 1]
        self.offset += len(whole)
        return whole, len(whole) < len(tail)

    def _foreign(self, mtime_ns: int) -> None:
        self._mtime_ns = mtime_ns
        self.last_foreign_ns = max(self.last_foreign_ns or 0, mtime_ns)

    def _mark_ours(self, st: os.stat_result) -> None:
        """Set the lock file's mtime to the session file's: the next opener sees the last write was ours."""
        self._ours = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._lock is not None:
            with contextlib.suppress(OSError):
                os.utime(self._lock.fileno(), ns=(st.st_atime_ns, st.st_mtime_ns))

    # ------------------------------------------------------------------ lock
    def lock(self) -> None:
        """Hold the write lock before a write; :class:`LockedError` if another process holds it.

        Taken once and kept; re-checked on every call: a second hard link to
        the file is refused, a deleted or replaced lock file is retaken.
        """
        _refuse_hard_links(self.path)
        if self._lock is not None and _lock_file_is(self._lock, lock_path_of(self.path)):
            return
        self.release()
        self._lock = take_lock_file(lock_path_of(self.path), self.path)
        self._last_write = time.monotonic()
        lockinfo.write_body(self._lock, lockinfo.body_for())
        remove_stale_temps(self.path)  # only the lock holder may; a killed rewrite leaves one

    def release(self) -> None:
        """Drop the write lock and remove its file (still ours while we hold it)."""
        if self._lock is not None:
            lock_path = lock_path_of(self.path)
            with contextlib.suppress(OSError):
                st = os.stat(self.path)
                if (st.st_ino, st.st_size, st.st_mtime_ns) == self._ours:
                    writemarks.note_written(self.path, st)
            let_go(self._lock, lock_path)
            self._lock = None

    def release_if_idle(self, idle_seconds: float) -> bool:
        """Drop the lock if we did not write for ``idle_seconds``; whether it was dropped now."""
        if self._lock is None or time.monotonic() - self._last_write < idle_seconds:
            return False
        self.release()
        return True


_TAKE_ATTEMPTS = 8


def take_lock_file(lock_path: Path, path: Path) -> IO[bytes]:
    """``flock`` the file at ``lock_path`` (:class:`LockedError` naming ``path``'s holder if it is taken).

    Retried when a releasing holder removed the file between our ``open`` and our ``flock``: a lock
    on a file no longer at ``lock_path`` would exclude no one.
    """
    for _ in range(_TAKE_ATTEMPTS):
        handle = open(lock_path, "a+b")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise locked_error(path) from None
        if _lock_file_is(handle, lock_path):
            return handle
        handle.close()  # we locked a file its holder removed on release: take the new one
    raise locked_error(path)


def let_go(handle: IO[bytes], lock_path: Path) -> None:
    """Remove the lock file ``handle`` holds (if ``lock_path`` still names it) and close it."""
    with contextlib.suppress(OSError):
        if _lock_file_is(handle, lock_path):
            lock_path.unlink()
        handle.close()


def _lock_file_is(handle: IO[bytes], lock_path: Path) -> bool:
    """Whether ``lock_path`` still names the file ``handle`` has open (not deleted, not replaced)."""
    try:
        return os.stat(lock_path).st_ino == os.fstat(handle.fileno()).st_ino
    except OSError:
        return False


def _refuse_hard_links(path: Path) -> None:
    try:
        links = os.stat(path).st_nlink
    except FileNotFoundError:
        return
    if links > 1:
        raise LockedError(
            f"{path} has {links} hard links: a writer using another name would not see this file's lock; "
            "remove the other links (or copy the file) to write it"
        )


def _written_by_holder(path: Path, st: os.stat_result) -> bool:
    """Whether the file's last change was made by a lock holder (see the module docstring)."""
    if writemarks.written_by_us(path, st):
        return True
    lock_path = lock_path_of(path)
    try:
        lock_st = os.stat(lock_path)
    except OSError:
        return False
    if lock_st.st_mtime_ns == st.st_mtime_ns:
        return True
    body = lockinfo.read_body(lock_path)
    return body is not None and not lockinfo.pid_alive(body.pid)


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

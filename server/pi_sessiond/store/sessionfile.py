"""A session's file as its session accounts for it: whether it exists, its lock, what the next write adds.

Invariants:
- ``path`` ``None``: the session lives in memory; nothing is written.
- Before the file exists (``on_disk`` false) nothing is locked; it is created
  whole, atomically, by :meth:`SessionFile.replace`, which takes the lock first.
- ``needs_rewrite``: an old-format (v1/v2) file, replaced whole by the next write.
- ``needs_newline``: the file's last line is torn; the next append starts with
  the newline (it is never written on open), and lines another program folds in
  end it too.
- ``lines`` counts the file's lines as we accounted for them.
- :meth:`SessionFile.append` lands at the size the guard (``guard.py``) accounted
  for, or writes nothing and answers ``None``.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from pi_sessiond.store.errors import WriteFailedError
from pi_sessiond.store.files import append_bytes, atomic_write, probe_writable
from pi_sessiond.store.guard import FileGuard, lock_path_of
from pi_sessiond.store.pathcheck import check_new_file


class SessionFile:
    """The file side of a session: its state on disk, its write lock and its writes."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.fsync = True
        self.on_disk = False
        self.needs_rewrite = False
        self.needs_newline = False
        self.lines = 0
        self.guard = FileGuard(path) if path is not None else None

    def opened(self, size: int, *, ends_with_newline: bool, lines: int, migrated: bool, newest_ns: int | None) -> None:
        """Account for the file just read: ``size`` bytes in ``lines`` lines, its newest entry from ``newest_ns``."""
        self.on_disk = size > 0
        self.needs_rewrite = migrated
        self.needs_newline = size > 0 and not ends_with_newline
        self.lines = lines
        if self.guard is not None:
            self.guard.opened(newest_ns)

    @property
    def last_foreign_append(self) -> float | None:
        """When another program last appended to the file (epoch seconds), as far as we saw; ``None``: never."""
        ns = self.guard.last_foreign_ns if self.guard is not None else None
        return ns / 1e9 if ns is not None else None

    @property
    def locked(self) -> bool:
        """Whether we hold the file's write lock now."""
        return self.guard is not None and self.guard.locked

    def release_if_idle(self, idle_seconds: float) -> bool:
        """Drop the write lock after ``idle_seconds`` without a write (retaken before the next write)."""
        return self.guard.release_if_idle(idle_seconds) if self.guard is not None else False

    def release(self) -> None:
        """Release the write lock."""
        if self.guard is not None:
            self.guard.release()

    def forget_lock_file(self) -> None:
        """Remove the lock file of a file that was never created."""
        if self.path is not None and not self.on_disk and not self.path.exists():
            with contextlib.suppress(OSError):
                lock_path_of(self.path).unlink()

    def lock(self) -> None:
        """Take the write lock; a lock file the OS refuses is :class:`WriteFailedError` of the session file."""
        if self.guard is None or self.path is None:
            return
        try:
            self.guard.lock()
        except OSError as exc:
            raise WriteFailedError(self.path, exc) from exc

    def lock_for_append(self) -> bool:
        """Take the lock of a file on disk before writing to it; whether there is such a file."""
        if self.guard is None or self.path is None or not self.on_disk:
            return False  # a session not yet on disk locks when its file is created
        self.lock()
        return True

    def probe(self) -> None:
        """Raise what the OS would answer to a write now (:class:`WriteFailedError`), writing nothing."""
        if self.path is None:
            return
        if self.on_disk:
            self.lock()
        probe_writable(self.path, rewrite=self.needs_rewrite or not self.on_disk)

    def appended_by_others(self) -> tuple[bytes, bool]:
        """The whole lines past our offset, and whether a torn line follows them."""
        assert self.guard is not None
        return self.guard.appended_by_others()

    def folded(self, tail: bytes) -> None:
        """Account for another program's whole lines ``tail``, now part of the session."""
        self.lines += tail.count(b"\n")
        self.needs_newline = False

    def append(self, lines: list[bytes]) -> bytes | None:
        """Append ``lines``; ``None`` if the file grew since we folded in (nothing written), else the bytes
        another writer slipped in just before ours (usually ``b""``)."""
        assert self.path is not None
        data = (b"\n" if self.needs_newline else b"") + b"".join(lines)
        expect = self.guard.offset if self.guard is not None else None
        start = append_bytes(self.path, data, fsync=self.fsync, expect_size=expect)
        if start is None:
            return None
        self.needs_newline = False
        self.lines += len(lines)
        return self.guard.wrote(start, len(data)) if self.guard is not None else b""

    def replace(self, data: bytes) -> None:
        """Write the whole file as ``data``, atomically (a new file, or an old format's one rewrite)."""
        assert self.path is not None
        if self.guard is not None:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise WriteFailedError(self.path.parent, exc) from exc
            self.lock()
        if not self.on_disk:
            check_new_file(self.path)  # a new session or a fork never replaces a FIFO, device or directory
        atomic_write(self.path, data, fsync=self.fsync)
        self.on_disk = True
        self.needs_rewrite = False
        self.needs_newline = False
        self.lines = data.count(b"\n")
        if self.guard is not None:
            self.guard.rewrote()

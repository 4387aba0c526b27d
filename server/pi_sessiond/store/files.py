"""Low-level file writes with the durability rules of the store.

- An append is one ``write`` of whole lines (never a partial line on purpose).
- ``fsync`` after each append unless the caller chose otherwise.
- A failed append is taken back: when the file's size is exactly where our
  bytes started plus what we wrote, it is truncated to that start and
  :class:`WriteFailedError` (``{path, cause}``) is raised; when another program
  appended meanwhile, the file is left alone (cutting would cut their lines)
  and :class:`InterleavedWriteError` (``conflict``) is raised.
- A full rewrite goes to a temporary file in the same directory, is fsynced,
  then renamed over the original (and the directory fsynced), so a crash
  leaves either the old file or the new one, never a mix; a temp file left by
  a crash is reused (and removed) by the next rewrite. A failed rewrite leaves
  the original untouched and raises :class:`WriteFailedError`.
- :func:`probe_writable` checks, without changing the file, that a write
  could be made now (called before a summarizer is paid for).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import gc
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NoReturn

from pi_sessiond.store import failpoints
from pi_sessiond.store.errors import InterleavedWriteError, WriteFailedError


def append_bytes(path: Path, data: bytes, *, fsync: bool = True, expect_size: int | None = None) -> int | None:
    """Append ``data`` with a single write; create the file if needed; returns where our bytes start.

    With ``expect_size``, nothing is written (``None`` is returned) unless the
    file has exactly that size once it is open: another writer appended since
    the caller last read it. The size is read and the write made with no other
    thread of this process running between them (:func:`_write_at_size`), so
    another program's line can land between the two only in that instant; if
    one does, O_APPEND still puts our bytes at the true end, and the returned
    start shows it.
    All or nothing: a failed write is taken back or reported (module docstring).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc
    try:
        start, written = 0, 0
        try:
            held = (_held_calls() if expect_size is not None and len(data) <= HELD_WRITE_MAX_BYTES
                    and failpoints.write_fault() is None else None)
            if held is not None and expect_size is not None:
                landed = _write_at_size(held, fd, data, expect_size)
                if landed is None:
                    return None
                start, written = landed
            else:
                start = os.fstat(fd).st_size
                if expect_size is not None and start != expect_size:
                    return None
            start, written = _write_all(fd, data, start, written)
            if fsync:
                os.fsync(fd)
        except OSError as exc:
            _take_back(fd, path, start, written, exc)
    finally:
        os.close(fd)
    return start


HELD_WRITE_MAX_BYTES = 1 << 20
"""Appends up to this size are written by :func:`_write_at_size` (which holds the GIL: a bigger write
would hold the event loop too)."""


def _write_at_size(calls: tuple[Callable[..., int], Callable[..., int]], fd: int, data: bytes,
                   size: int) -> tuple[int, int] | None:
    """``None`` unless the file has ``size`` bytes; else our first write: (where it landed, bytes written).

    ``os.fstat`` and ``os.write`` each let other threads run, and the thread that
    checked the size may then wait for the GIL for milliseconds (a summary being
    parsed in another thread) before it writes: a window in which a live Pi's line
    lands and ours follows it with a stale parent, leaving Pi's turn on a side
    branch. libc's ``lseek`` and ``write`` called through ``ctypes.PyDLL`` keep the
    GIL, so nothing of ours runs between the check and the write (``calls``: those two,
    :func:`_held_calls`; where they are not available, the ``os`` calls). The price: while the kernel holds that write
    (dirty-page throttling, a slow network mount), no other thread of ours runs
    either; a line of a few kB normally takes microseconds.
    """
    lseek, write = calls
    end = lseek(fd, 0, os.SEEK_END)
    if end != size:
        if end < 0:
            raise OSError(_errno(), os.strerror(_errno()))
        return None
    n = write(fd, data, len(data))
    if n < 0:
        code = _errno()
        if code == errno.EINTR:
            return size, 0  # nothing written: _write_all writes it (retrying as os.write does)
        raise OSError(code, os.strerror(code))
    return os.lseek(fd, 0, os.SEEK_CUR) - n, n  # O_APPEND: where our first byte landed


@functools.cache
def _held_calls() -> tuple[Callable[..., int], Callable[..., int]] | None:
    """libc's ``lseek`` and ``write`` as calls that keep the GIL (64-bit POSIX), else ``None``."""
    import ctypes

    if os.name != "posix" or ctypes.sizeof(ctypes.c_void_p) != 8:
        return None
    try:
        libc = ctypes.PyDLL(None, use_errno=True)
        lseek, write = libc.lseek, libc.write
    except (OSError, AttributeError):
        return None
    lseek.restype, lseek.argtypes = ctypes.c_int64, [ctypes.c_int, ctypes.c_int64, ctypes.c_int]
    write.restype, write.argtypes = ctypes.c_ssize_t, [ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
    return lseek, write


def _errno() -> int:
    import ctypes

    return ctypes.get_errno()


def _write_all(fd: int, data: bytes, start: int, written: int = 0) -> tuple[int, int]:
    """Write the rest of ``data`` (past ``written`` bytes already written at ``start``) at the end;
    returns (where our bytes start, bytes written); raises ``OSError``."""
    view = memoryview(data)[written:]
    fault = failpoints.write_fault()
    if fault is not None:  # a full disk as the OS shows it: part of the bytes, then the error
        half = os.write(fd, view[: len(view) // 2])
        raise _Partial(os.lseek(fd, 0, os.SEEK_CUR) - half, half, fault)
    while view:
        try:
            n = os.write(fd, view)
        except OSError as exc:
            raise _Partial(start, written, exc) from exc
        if written == 0:
            start = os.lseek(fd, 0, os.SEEK_CUR) - n  # O_APPEND: where our first byte landed
        written += n
        view = view[n:]
    return start, written


class _Partial(OSError):
    """An ``OSError`` after ``written`` of our bytes landed at ``start``."""

    def __init__(self, start: int, written: int, exc: OSError) -> None:
        super().__init__(exc.errno, exc.strerror)
        self.start, self.written = start, written


def _take_back(fd: int, path: Path, start: int, written: int, exc: OSError) -> NoReturn:
    """Undo our ``written`` bytes at ``start`` if nobody appended after them; always raises."""
    if isinstance(exc, _Partial):
        start, written = exc.start, exc.written
    if written:
        size = os.fstat(fd).st_size
        if size != start + written:
            raise InterleavedWriteError(path, exc) from exc
        with contextlib.suppress(OSError):  # if even this fails, the torn line is folded in as a skipped line
            os.ftruncate(fd, start)
            os.fsync(fd)
    raise WriteFailedError(path, exc) from exc


def atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename); :class:`WriteFailedError` on failure."""
    try:
        _atomic_write(path, data, fsync)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc


def _atomic_write(path: Path, data: bytes, fsync: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fixed name: the caller holds the session's write lock, so one writer at a
    # time; a temp file left by a writer killed mid-rewrite is simply overwritten.
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
            fault = failpoints.write_fault()
            if fault is not None:
                fh.write(data[: len(data) // 2])
                raise fault
            fh.write(data)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(tmp, os.stat(path).st_mode & 0o777)
        failpoints.reached(failpoints.REWRITE_BEFORE_RENAME)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    if fsync:
        _fsync_dir(path.parent)


def probe_writable(path: Path, *, rewrite: bool) -> None:
    """:class:`WriteFailedError` unless ``path`` could be appended to (``rewrite``: replaced) now.

    Opens the file for appending without writing; for a rewrite, or a file not
    yet created, also creates and removes the temporary file beside it (the
    caller holds the write lock, so that name is ours). Root passes permission
    checks, but not a read-only mount.
    """
    try:
        fault = failpoints.write_fault()
        if fault is not None:
            raise fault
        if path.exists():
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC))
        if rewrite or not path.exists():
            _probe_directory(path)
    except OSError as exc:
        raise WriteFailedError(path, exc) from exc


def _probe_directory(path: Path) -> None:
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if existing != path.parent:  # not created yet: the nearest existing folder must take a new entry
        if os.statvfs(existing).f_flag & os.ST_RDONLY:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(existing))
        if not os.access(existing, os.W_OK | os.X_OK):
            raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(existing))
        return
    tmp = temp_path(path)
    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600))
    tmp.unlink()


def temp_path(path: Path) -> Path:
    """Where :func:`atomic_write` stages a rewrite of ``path``."""
    return path.with_name(f".{path.name}.tmp")


def remove_stale_temps(path: Path) -> None:
    """Delete rewrite temp files of ``path`` left by a killed writer (call under the write lock)."""
    for stale in (temp_path(path), *path.parent.glob(f".{path.name}.*.tmp")):
        with contextlib.suppress(OSError):
            stale.unlink()


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


PAUSE_MIN_BYTES = 1 << 20
"""The least work (bytes of JSON, or their equivalent) for which ``gc_paused(size)`` pauses the collector
and freezes what it made; smaller work runs with the collector as usual."""


@contextlib.contextmanager
def gc_paused(size: int | None = None) -> Iterator[None]:
    """Pause the cyclic GC while bulk-loading acyclic data (entries, parsed JSON): always for a session's
    load (``size`` ``None``), for other work of ``size`` bytes' worth when that is at least
    :data:`PAUSE_MIN_BYTES`.

    Loading allocates many objects and no cycles; the collector would only
    rescan the growing heap again and again (measured: ~2x slower loads).
    On the way out everything alive is frozen (``gc.freeze``): otherwise the
    first collection after the load walks every loaded object at once, a stall
    of every thread (the event loop's included) of a tenth of a second per
    million objects. Frozen objects are still freed by reference counting, but
    cyclic garbage alive at that moment is never collected: other threads'
    (a provider's requests and responses, exceptions with their frames) made
    while the collector was paused. So work repeated while the daemon serves
    (a projection rebuilt after each compaction or navigation) pauses and
    freezes only when it is big (a freeze at every rebuild kept ~50 kB of each
    summary job: ``tests/soak/provider_soak.py``); a session's load always does
    (a thousand small sessions left to the collector would be walked whole,
    again and again). Collecting the young generations first was measured:
    it makes each of a thousand opens 2.6x slower, and keeps only a third
    less garbage, so it is not done.
    """
    if size is not None and size < PAUSE_MIN_BYTES:
        yield
        return
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()

"""Low-level file writes with the durability rules of the store.

- An append is one ``write`` of whole lines (never a partial line on purpose).
- ``fsync`` after each append unless the caller chose otherwise.
- A full rewrite goes to a temporary file in the same directory, is fsynced,
  then renamed over the original (and the directory fsynced), so a crash
  leaves either the old file or the new one, never a mix; a temp file left by
  a crash is reused (and removed) by the next rewrite.
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Iterator
from pathlib import Path

from pi_sessiond.store import failpoints


def append_bytes(path: Path, data: bytes, *, fsync: bool = True, expect_size: int | None = None) -> int | None:
    """Append ``data`` with a single write; create the file if needed; returns where our bytes start.

    With ``expect_size``, nothing is written (``None`` is returned) unless the
    file has exactly that size once it is open: another writer appended since
    the caller last read it (O_APPEND still puts our bytes at the true end if
    one appends between this check and the write; the returned start shows it).
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        if expect_size is not None and os.fstat(fd).st_size != expect_size:
            return None
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        end = os.lseek(fd, 0, os.SEEK_CUR)
        if fsync:
            os.fsync(fd)
    finally:
        os.close(fd)
    return end - len(data)


def atomic_write(path: Path, data: bytes, *, fsync: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (temp file, fsync, rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # A fixed name: the caller holds the session's write lock, so one writer at a
    # time; a temp file left by a writer killed mid-rewrite is simply overwritten.
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as fh:
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


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic GC while bulk-loading acyclic data (entries, parsed JSON).

    Loading allocates many objects and no cycles; the collector would only
    rescan the growing heap again and again (measured: ~2x slower loads).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()

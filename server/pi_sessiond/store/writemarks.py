"""How a lock holder left each session file, kept outside the session's folder.

A lock holder's write is recognised at the next open (``store/guard.py``) by a
mark: the session file's inode, size and mtime when the holder let go (our own
writes, and a live Pi's under ``pi-sessiond hold-lock``), kept in
``<runtime dir>/written/<sha256 of the path>``. The lock file is removed when
its holder releases it, so the session's folder holds only sessions; the mark
outlives it. Marks are best effort: one that cannot be written or read means
"not ours", the safe answer (the ``liveWriter`` guard may then wait).
A mark only matters while its write is recent, so the first mark a process
writes also removes the marks untouched for :data:`KEEP_SECONDS`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from pathlib import Path

from pi_sessiond.store.layout import runtime_dir


def marks_dir() -> Path:
    """``<runtime dir>/written``."""
    return runtime_dir() / "written"


def mark_path(path: Path) -> Path:
    """The mark of the session file ``path`` (its absolute path hashed)."""
    return marks_dir() / hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:32]


def _stamp(st: os.stat_result) -> str:
    return f"{st.st_ino} {st.st_size} {st.st_mtime_ns}\n"


KEEP_SECONDS = 30 * 86400
"""How long an untouched mark is kept (a ``liveWriter`` window that long would be absurd)."""

_pruned = False


def note_written(path: Path, st: os.stat_result) -> None:
    """Record that the file ``path`` is, as ``st`` describes it, what we wrote."""
    with contextlib.suppress(OSError):
        directory = marks_dir()
        directory.parent.mkdir(mode=0o700, exist_ok=True)
        directory.mkdir(mode=0o700, exist_ok=True)
        target = mark_path(path)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(_stamp(st))
        os.replace(tmp, target)
    global _pruned
    if not _pruned:
        _pruned = True
        prune(time.time() - KEEP_SECONDS)


def prune(before: float) -> int:
    """Remove the marks (and stray temporary files) last changed before ``before``; how many went."""
    removed = 0
    with contextlib.suppress(OSError), os.scandir(marks_dir()) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < before:
                    os.unlink(entry.path)
                    removed += 1
    return removed


def written_by_us(path: Path, st: os.stat_result) -> bool:
    """Whether ``st`` (the file ``path`` now) is exactly what we last wrote to it."""
    try:
        return mark_path(path).read_text() == _stamp(st)
    except OSError:
        return False

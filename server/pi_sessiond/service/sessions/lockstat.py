"""Which sessions' lock files changed since the last look: one ``stat`` each, no body read.

Invariants:
- A session is reported the first time it is seen, and whenever its lock
  file's (inode, size, mtime) changed, appeared or went away; a lock body
  rewritten in place changes its mtime and size.
- Safe to call from a worker thread: it touches only its own table, and
  one caller at a time uses it (the watch's polling task).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pi_sessiond.store import lockinfo

Signature = tuple[int, int, int] | None


class LockStats:
    """The last seen stat signature of each session's lock file."""

    def __init__(self) -> None:
        self._seen: dict[str, Signature] = {}

    def changed(self, paths: Mapping[str, Path | None]) -> set[str]:
        """The keys of ``paths`` whose lock file is new to this table or changed; forgets keys not in ``paths``."""
        changed = set()
        for key, path in paths.items():
            signature = _signature(path)
            if key not in self._seen or self._seen[key] != signature:
                self._seen[key] = signature
                changed.add(key)
        for key in self._seen.keys() - paths.keys():
            del self._seen[key]
        return changed


def _signature(path: Path | None) -> Signature:
    if path is None:
        return None
    try:
        st = os.stat(lockinfo.lock_path(path))
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)

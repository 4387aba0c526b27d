"""The one check of a session file before anything reads it: only a regular file of bounded size is read.

Every place that opens or lists a session file (``pi/openSession``,
``pi/listSessions``, the command line, a session found by id) calls
:func:`check_session_file` first; a fork or a new session's file calls
:func:`check_new_file`. Contract:

- Symlinks are resolved and the *target* is checked.
- Only a regular file passes. A directory, FIFO, socket or device is
  :class:`NotASessionError` and is never opened for reading, so nothing can
  hang on it; the file is opened with ``O_NONBLOCK`` only to confirm, on the
  open descriptor, that it is still the regular file that was stat-ed.
- A file above ``max_bytes`` (``daemon.maxSessionBytes``) is
  :class:`TooLargeError` before a byte is read; one with more than
  :data:`MAX_SESSION_LINES` lines is refused the same way after reading
  (:func:`check_line_count`).
- A missing or unreadable file raises the ``OSError`` (callers decide how to
  report it).

Nothing here reads the file's content, so the loading path (``reader.py``)
stays free to read it however it likes.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from pi_sessiond.store.errors import NotASessionError, TooLargeError

DEFAULT_MAX_SESSION_BYTES = 4 * 1024**3
"""``daemon.maxSessionBytes``'s default (4 GiB), for callers without settings."""
MAX_SESSION_LINES = 50_000_000
"""At most this many lines in one session file (Pi has no limit; 50 million lines is far beyond any real session)."""

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def kind_of(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words (``"a FIFO"``…); ``"a regular file"`` otherwise."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def check_session_file(path: Path, max_bytes: int) -> os.stat_result:
    """Check ``path`` (its target, for a symlink) may be read as a session; its stat.

    Raises :class:`NotASessionError` (not a regular file), :class:`TooLargeError`
    (above ``max_bytes``) or ``OSError`` (missing, unreadable).
    """
    st = os.stat(path)  # follows symlinks: the target is what we would read
    _require_regular(path, st.st_mode)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)  # the file actually opened (it may have been swapped since the stat)
    finally:
        os.close(fd)
    _require_regular(path, st.st_mode)
    if st.st_size > max_bytes:
        raise TooLargeError(path, f"{st.st_size} bytes", f"daemon.maxSessionBytes is {max_bytes}")
    return st


def check_line_count(path: Path, lines: int, max_lines: int = MAX_SESSION_LINES) -> None:
    """:class:`TooLargeError` when a file read as ``lines`` lines has more than ``max_lines``."""
    if lines > max_lines:
        raise TooLargeError(path, f"{lines} lines", f"at most {max_lines} lines are read")


def check_new_file(path: Path) -> None:
    """Check a file we are about to create (a fork, a new session) would be a regular file.

    Nothing there yet is fine; an existing regular file is fine (the caller
    decides); anything else (a FIFO, a device, a directory, a dangling link's
    target being one of them) is :class:`NotASessionError`.
    """
    with contextlib.suppress(FileNotFoundError):
        _require_regular(path, os.stat(path).st_mode)


def _require_regular(path: Path, mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise NotASessionError(path, f"Session file is not a valid pi session ({kind_of(mode)}): {path}")

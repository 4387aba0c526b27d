"""Named points where a test can stop the process, to kill it at an exact moment.

Crash tests must kill the daemon *inside* a write (say, after the rewrite's
temporary file is complete and before it is renamed), and a timer cannot hit a
window of a few milliseconds on a loaded machine. So the store calls
:func:`reached` at such points; it does nothing unless the point is armed.

``PI_SESSIOND_FAILPOINTS=name[,name…]`` (read once, at import) arms points.
An armed point, when reached, creates the file named by
``PI_SESSIOND_FAILPOINT_MARKER`` (if set) holding the point's name, then blocks
the calling thread for good: the test waits for the marker and sends SIGKILL.
Unarmed points cost one set lookup.

Write faults, for machines where a real one cannot be made (root ignores
``chmod``; no tmpfs to fill): ``PI_SESSIOND_FAIL_WRITE=ENOSPC`` (any errno
name) makes every session write fail with that error the way the OS does it:
an append writes the first half of its bytes, then fails; a rewrite fails
while writing its temporary file; the writability probe fails at once.
Real faults (``RLIMIT_FSIZE``, a full or read-only mount) take the same paths.
"""

from __future__ import annotations

import errno
import os
import threading

ARMED: frozenset[str] = frozenset(p for p in os.environ.get("PI_SESSIOND_FAILPOINTS", "").split(",") if p)
MARKER = os.environ.get("PI_SESSIOND_FAILPOINT_MARKER")

REWRITE_BEFORE_RENAME = "rewrite.before-rename"  # the staged copy is written and fsynced, not yet renamed
FAIL_WRITE = os.environ.get("PI_SESSIOND_FAIL_WRITE", "")


def write_fault() -> OSError | None:
    """The injected write error (``PI_SESSIOND_FAIL_WRITE``), or ``None`` when none is armed."""
    code = getattr(errno, FAIL_WRITE, None) if FAIL_WRITE else None
    return OSError(code, os.strerror(code)) if isinstance(code, int) else None


def reached(name: str) -> None:
    """Stop here for good when ``name`` is armed (see the module docstring); else return at once."""
    if name not in ARMED:
        return
    if MARKER:
        with open(MARKER, "w", encoding="utf-8") as fh:
            fh.write(name)
    threading.Event().wait()

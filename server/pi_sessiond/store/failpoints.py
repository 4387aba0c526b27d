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
"""

from __future__ import annotations

import os
import threading

ARMED: frozenset[str] = frozenset(p for p in os.environ.get("PI_SESSIOND_FAILPOINTS", "").split(",") if p)
MARKER = os.environ.get("PI_SESSIOND_FAILPOINT_MARKER")

REWRITE_BEFORE_RENAME = "rewrite.before-rename"  # the staged copy is written and fsynced, not yet renamed


def reached(name: str) -> None:
    """Stop here for good when ``name`` is armed (see the module docstring); else return at once."""
    if name not in ARMED:
        return
    if MARKER:
        with open(MARKER, "w", encoding="utf-8") as fh:
            fh.write(name)
    threading.Event().wait()

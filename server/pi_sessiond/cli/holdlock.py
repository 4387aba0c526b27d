"""``pi-sessiond hold-lock FILE --pid PID [--socket PATH]``: hold a session's write lock for a live Pi.

Node has no ``flock``, so the Pi extension runs this as a child while Pi has
the session open. It takes the lock on ``<FILE>.lock`` (exit 1 naming the
holder when another process has it), writes the body ``{pid, program: "pi",
since, socket?}`` with the Pi's pid (``--pid``) and forwarding socket
(``--socket``), prints one ready line (JSON ``{"ready": true, "lock": …}``) and
then waits for its stdin to close: when Pi exits, is killed or lets the
session go, the pipe closes, and this process notes the session file as a lock
holder left it (``store/writemarks.py``: a later open does not take Pi's last
lines for another program's, and the ``liveWriter`` guard does not wait for
them), removes the lock file (daemons stop treating the session as live) and
exits. Nothing is read from or written to the session file itself.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

from pi_sessiond.store import lockinfo, writemarks
from pi_sessiond.store.guard import let_go, take_lock_file

NAME = "hold-lock"
HELP = "hold a session's write lock for a live Pi until stdin closes"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="the session file (neither it nor its folder need exist yet)")
    parser.add_argument("--pid", type=int, default=None, help="the Pi's pid recorded in the lock (default: the parent)")
    parser.add_argument("--socket", default=None, help="where the Pi accepts forwarded requests")


def run(args: argparse.Namespace) -> int:
    session = Path(args.file).absolute()
    session.parent.mkdir(parents=True, exist_ok=True)  # Pi creates its session folder with the first write
    path = lockinfo.lock_path(session)
    handle = take_lock_file(path, session)  # held until stdin closes
    pid = args.pid if args.pid is not None else os.getppid()
    body = lockinfo.body_for("pi", pid=pid, socket=args.socket)
    lockinfo.write_body(handle, body)
    print(json.dumps({"ready": True, "lock": str(path), "pid": pid}), flush=True)
    try:
        wait_for_eof()
    finally:
        with contextlib.suppress(OSError):
            writemarks.note_written(session, os.stat(session))  # Pi's lines, written under this lock
        let_go(handle, path)
    return 0


def wait_for_eof() -> None:
    """Block until stdin reaches end of file (the parent closed the pipe or died)."""
    fd = sys.stdin.fileno()
    while os.read(fd, 4096):
        pass

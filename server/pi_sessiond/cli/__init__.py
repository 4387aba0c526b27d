"""The ``pi-sessiond`` command line: serve the daemon, or work on a session file without one.

``pi-sessiond`` with no subcommand (or only serve options such as ``--tcp``)
serves the daemon; that path imports only what serving needs, so the editor
gets its ``initialize`` answer fast. Every other subcommand lives in
:mod:`pi_sessiond.cli.dispatch`; ``--version`` (``-V``) prints the version. Exit codes: 0 success, 1 the operation
failed (message on stderr), 2 usage error.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

_SERVE_OPTIONS = ("--stdio", "--tcp", "--ws", "--log-file", "--log-level")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pi-sessiond``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"]):
        import pi_sessiond

        print(f"pi-sessiond {pi_sessiond.__version__}")
        return 0
    if "_ARGCOMPLETE" not in os.environ and _serves(args):
        import gc

        gc.disable()  # until the server's imports are frozen (serve.run): they are never garbage
        from pi_sessiond.cli import serve

        return serve.main(args)
    from pi_sessiond.cli import dispatch

    return dispatch.main(args)


def _serves(args: list[str]) -> bool:
    return not args or args[0] == "serve" or args[0].split("=")[0] in _SERVE_OPTIONS

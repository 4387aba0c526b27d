"""``pi-sessiond list [--cwd DIR] [--json]``: the sessions in Pi's session folder, newest first.

The same rows as ``pi/listSessions``: every project's, or only DIR's with ``--cwd``.
"""

from __future__ import annotations

import argparse
import os

from pi_protocol import unstructure
from pi_protocol.params import ListSessionsParams
from pi_sessiond.cli.common import preview, print_json
from pi_sessiond.cli.local import local_daemon
from pi_sessiond.store.layout import sessions_root

NAME = "list"
HELP = "the sessions in Pi's session folder (~/.pi/agent/sessions), newest first"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cwd", metavar="DIR", help="only the sessions of the project in DIR (default: every project)")
    parser.add_argument("--json", action="store_true", help="print the pi/listSessions result as JSON")


def run(args: argparse.Namespace) -> int:
    cwd = os.path.abspath(args.cwd) if args.cwd else None
    with local_daemon() as local:
        result = local.service.list_sessions(ListSessionsParams(cwd=cwd))
    if args.json:
        print_json(unstructure(result))
        return 0
    if not result.sessions:
        print(f"no sessions in {sessions_root()}" + (f" for {cwd}" if cwd else ""))
        return 0
    for row in result.sessions:
        title = row.name or preview(row.first_message, 50) or "(empty)"
        print(f"{(row.modified or '?')[:19]}  {row.message_count:5d} msgs  {title}")
        print(f"{'':21s}{row.path}")
    return 0

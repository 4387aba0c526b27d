"""The subcommands of ``pi-sessiond`` (everything but serving the daemon).

Exit codes: 0 success, 1 the operation failed (message on stderr: a
:class:`~pi_sessiond.errors.PiError`'s message, one line), 2 usage error.
``--example`` stands for the bundled example session wherever FILE is
expected; commands that write use a temporary copy of it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from pi_sessiond.cli import call as call_command
from pi_sessiond.cli import compact as compact_command
from pi_sessiond.cli import context as context_command
from pi_sessiond.cli import demo as demo_command
from pi_sessiond.cli import navigate as navigate_command
from pi_sessiond.cli import serve as serve_command
from pi_sessiond.cli import stats as stats_command
from pi_sessiond.cli import tree as tree_command
from pi_sessiond.cli.common import CliError
from pi_sessiond.errors import PiError

_COMMANDS = (
    serve_command,
    context_command,
    tree_command,
    compact_command,
    navigate_command,
    stats_command,
    call_command,
    demo_command,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="pi-sessiond",
        description="Pi session trees: context, compaction and branch summaries.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in _COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        code: int = args.run(args)
    except CliError as exc:
        print(f"pi-sessiond {args.command}: {exc}", file=sys.stderr)
        return exc.code
    except PiError as exc:  # the operation failed: the same errors the daemon answers with a code
        print(f"pi-sessiond {args.command}: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 1
    return code

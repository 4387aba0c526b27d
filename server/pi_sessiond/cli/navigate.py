"""``pi-sessiond navigate FILE TARGET_ID [...]``: Pi's ``/tree`` on a file (``pi/navigateTree``).

Without ``--summarize`` or ``--label`` nothing is written (Pi never stores the
leaf); the result, ``editorText`` included, is printed either way. Options may
come before or after FILE and TARGET_ID.
"""

from __future__ import annotations

import argparse
import asyncio

from pi_protocol import unstructure
from pi_protocol.params import NavigateTreeParams
from pi_sessiond.cli.common import CliError, add_file_argument, add_quiet_argument, print_json, session_path
from pi_sessiond.cli.local import running_daemon
from pi_sessiond.cli.progress import StderrProgress
from pi_sessiond.cli.runtime import add_summarizer_arguments, flag_settings

NAME = "navigate"
HELP = "move to another entry of the tree, optionally summarizing the branch left"


def configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("target", metavar="TARGET_ID", nargs="?", help="the entry to navigate to")
    parser.add_argument("--summarize", action="store_true", help="summarize the branch being left")
    parser.add_argument("--instructions", metavar="TEXT", help="extra focus for the summary")
    parser.add_argument("--replace-instructions", action="store_true",
                        help="use --instructions instead of the default prompt")
    parser.add_argument("--label", metavar="L", help="label the summary (or the target) with L")
    parser.add_argument("--json", action="store_true", help="print the pi/navigateTree result as JSON")
    parser.add_argument("--force", action="store_true",
                        help="write even if another program (a running Pi) appended lately; lands on the newest leaf")
    add_quiet_argument(parser)
    add_summarizer_arguments(parser)


def run(args: argparse.Namespace) -> int:
    if args.example and args.target is None and args.file is not None:
        args.file, args.target = None, args.file  # `navigate --example TARGET`
    if args.target is None:
        raise CliError("TARGET_ID is required", 2)
    return asyncio.run(_navigate(args))


async def _navigate(args: argparse.Namespace) -> int:
    path = session_path(args, writes=bool(args.summarize or args.label))
    async with running_daemon(flag_settings(args), StderrProgress(quiet=args.quiet)) as local:
        info = local.open(path)
        params = NavigateTreeParams(
            session_id=info.session_id, target_id=args.target, summarize=args.summarize,
            custom_instructions=args.instructions, replace_instructions=args.replace_instructions, label=args.label,
            force=args.force,
        )
        result = await local.service.navigate_tree(params, local.progress)
    if args.json:
        print_json(unstructure(result))
        return 0
    print(f"leaf: {info.leaf_id} -> {result.leaf_id}")
    if result.entry is not None:
        print(str(result.entry.get("summary", "")))
    if result.editor_text is not None:
        print(f"editor text:\n{result.editor_text}")
    return 0

"""``pi-sessiond navigate FILE TARGET_ID [...]``: Pi's ``/tree`` on a file.

Without ``--summarize`` or ``--label`` nothing is written (Pi never stores the
leaf); the result, ``editorText`` included, is printed either way.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pi_protocol import NavigateResult, unstructure
from pi_protocol.settings import Settings
from pi_sessiond.cli.common import add_file_argument, open_session, print_json, session_path
from pi_sessiond.cli.runtime import add_summarizer_arguments, settings_for, summarizer_for
from pi_sessiond.pipeline.navigation import navigate_tree
from pi_sessiond.store.session import Session

JsonDict = dict[str, Any]


def add_parser(sub: Any) -> None:
    parser = sub.add_parser(
        "navigate", help="move to another entry of the tree, optionally summarizing the branch left"
    )
    add_file_argument(parser)
    parser.add_argument("target", metavar="TARGET_ID", help="the entry to navigate to")
    parser.add_argument("--summarize", action="store_true", help="summarize the branch being left")
    parser.add_argument("--instructions", metavar="TEXT", help="extra focus for the summary")
    parser.add_argument(
        "--replace-instructions", action="store_true", help="use --instructions instead of the default prompt"
    )
    parser.add_argument("--label", metavar="L", help="label the summary (or the target) with L")
    parser.add_argument("--json", action="store_true", help="print the pi/navigateTree result as JSON")
    add_summarizer_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    writes = bool(args.summarize or args.label)
    session = open_session(session_path(args, writes=writes))
    settings = settings_for(args, session.cwd)
    return asyncio.run(_navigate(session, settings, args))


async def _navigate(session: Session, settings: Settings, args: argparse.Namespace) -> int:
    summarizer = summarizer_for(settings) if args.summarize else None
    try:
        result = await navigate_tree(
            session,
            args.target,
            summarizer=summarizer,
            summarize=args.summarize,
            custom_instructions=args.instructions,
            replace_instructions=args.replace_instructions,
            label=args.label,
            reserve_tokens=settings.branch_summary.reserve_tokens,
        )
    finally:
        if summarizer is not None:
            await summarizer.aclose()
    doc = NavigateResult(
        leaf_id=result.leaf_id,
        entry=result.entry.data if result.entry is not None else None,
        editor_text=result.editor_text,
        cancelled=result.cancelled,
    )
    if args.json:
        print_json(unstructure(doc))
        return 0
    print(f"leaf: {result.old_leaf_id} -> {result.leaf_id}")
    if result.entry is not None:
        print(str(result.entry.data.get("summary", "")))
    if result.editor_text is not None:
        print(f"editor text:\n{result.editor_text}", file=sys.stderr)
    return 0

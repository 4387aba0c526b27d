"""``pi-sessiond compact FILE --dry-run [...] [--json]``: preview a compaction.

The dry run prepares a compaction of the leaf's path exactly as Pi 0.73.1
would and prints it; it never writes. Exit codes: 0 whenever Pi would return
a preparation (even an empty one, flagged ``nothingToCompact``), 1 where Pi
returns none (empty path, or the newest entry is already a compaction), 2 for
usage errors. Without ``--dry-run`` it runs the configured summarizer
(offline unless settings.json or the flags say otherwise) and appends one
compaction entry; with ``--example`` it works on a temporary copy.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from pi_protocol import CompactionPreview, CompactResult, unstructure
from pi_protocol.settings import CompactionSettings, Settings
from pi_sessiond.cli.common import CliError, add_file_argument, open_session, print_json, session_path
from pi_sessiond.cli.runtime import add_summarizer_arguments, settings_for, summarizer_for
from pi_sessiond.compaction.prepare import (
    CompactionPreparation,
    prepare_compaction,
)
from pi_sessiond.pipeline.compaction import compact, preview
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session

JsonDict = dict[str, Any]
ALREADY_COMPACTED = "Already compacted"
TOO_SMALL = "Nothing to compact (session too small)"


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def add_parser(sub: Any) -> None:
    """Register the ``compact`` subcommand."""
    parser = sub.add_parser("compact", help="compact the leaf's path (--dry-run: preview only)")
    add_file_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the preparation, write nothing")
    parser.add_argument("--instructions", metavar="TEXT", help="extra focus for the summary")
    defaults = CompactionSettings()  # shown in --help; settings.json may change them
    parser.add_argument(
        "--keep-recent-tokens",
        type=_count,
        metavar="N",
        default=None,
        help=f"tokens of recent messages kept verbatim (default {defaults.keep_recent_tokens})",
    )
    parser.add_argument(
        "--reserve-tokens",
        type=_count,
        metavar="N",
        default=None,
        help=f"tokens reserved for the summary (default {defaults.reserve_tokens})",
    )
    parser.add_argument("--json", action="store_true", help="print the preparation / the pi/compact result as JSON")
    add_summarizer_arguments(parser)
    parser.set_defaults(run=run)


def settings_from(args: argparse.Namespace, cwd: str | None = None) -> Settings:
    """Layered settings plus the command-line overrides."""
    compaction = {
        key: value
        for key, value in (("keepRecentTokens", args.keep_recent_tokens), ("reserveTokens", args.reserve_tokens))
        if value is not None
    }
    return settings_for(args, cwd, {"compaction": compaction} if compaction else None)


def refusal(path: list[Entry]) -> str:
    """Pi's message for a path it will not prepare."""
    return ALREADY_COMPACTED if path and path[-1].type == "compaction" else TOO_SMALL


def _print_text(prep: CompactionPreparation, doc: CompactionPreview) -> None:
    split = f"yes, turn starts at index {prep.turn_start_index}" if prep.is_split_turn else "no"
    print(f"first kept entry: {prep.first_kept_entry_id} (path index {prep.first_kept_entry_index})")
    print(f"split turn: {split}")
    print(f"tokens before: {prep.tokens_before}")
    print(f"messages to summarize: {len(prep.messages_to_summarize)}")
    print(f"turn prefix messages: {len(prep.turn_prefix_messages)}")
    print(f"previous summary: {'yes' if prep.previous_summary else 'no'}")
    print(f"read files: {len(doc.read_files)}  modified files: {len(doc.modified_files)}")
    if prep.nothing_to_compact:
        print("nothing to compact: Pi 0.73.1 would still ask for a summary of an empty conversation")
    print("(use --json for the serialized conversation and the full request text)")


def run(args: argparse.Namespace) -> int:
    """Preview (``--dry-run``) or run a compaction; see the module docstring for exit codes."""
    session = open_session(session_path(args, writes=not args.dry_run))
    settings = settings_from(args, session.cwd)
    if not args.dry_run:
        return asyncio.run(_compact(session, settings, args))
    path = session.path_to()
    prep = prepare_compaction(path, settings.compaction)
    if prep is None:
        raise CliError(refusal(path), 1)
    doc = preview(prep, args.instructions)
    if args.json:
        print_json(unstructure(doc))
    else:
        _print_text(prep, doc)
    return 0


async def _compact(session: Session, settings: Settings, args: argparse.Namespace) -> int:
    summarizer = summarizer_for(settings)
    try:
        result = await compact(
            session,
            summarizer,
            settings=settings.compaction,
            custom_instructions=args.instructions,
            progress=None if args.json else _progress,
        )
    finally:
        await summarizer.aclose()
    if args.json:
        doc = CompactResult(
            entry=result.entry.data, tokens_before=result.tokens_before, tokens_after=result.tokens_after
        )
        print_json(unstructure(doc))
        return 0
    print(result.entry.data.get("summary", ""))
    sizes = f"context {result.tokens_before} -> {result.tokens_after} tokens"
    print(f"\ncompacted {session.path}: {sizes}", file=sys.stderr)
    return 0


def _progress(message: str, percentage: int | None) -> None:
    print(f"… {message}", file=sys.stderr, flush=True)

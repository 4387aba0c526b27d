"""``pi-sessiond compact FILE --dry-run [...] [--json]``: preview a compaction.

The dry run prepares a compaction of the leaf's path exactly as Pi 0.73.1
would and prints it; it never writes. Exit codes: 0 whenever Pi would return
a preparation (even an empty one, flagged ``nothingToCompact``), 1 where Pi
returns none (empty path, or the newest entry is already a compaction), 2 for
usage errors. Without ``--dry-run`` the command fails (exit 1) until a
summarizer exists.
"""

from __future__ import annotations

import argparse
from typing import Any

from pi_protocol import CompactionPreview, unstructure
from pi_sessiond.cli.common import CliError, add_file_argument, open_session, print_json, session_path
from pi_sessiond.compaction.prepare import (
    CompactionPreparation,
    prepare_compaction,
    summary_requests,
)
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.store.entry import Entry

NO_SUMMARIZER = "summarizer not available yet; use --dry-run to preview the compaction"
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
    defaults = CompactionSettings()
    parser.add_argument(
        "--keep-recent-tokens",
        type=_count,
        metavar="N",
        default=defaults.keep_recent_tokens,
        help=f"tokens of recent messages kept verbatim (default {defaults.keep_recent_tokens})",
    )
    parser.add_argument(
        "--reserve-tokens",
        type=_count,
        metavar="N",
        default=defaults.reserve_tokens,
        help=f"tokens reserved for the summary (default {defaults.reserve_tokens})",
    )
    parser.add_argument("--json", action="store_true", help="print the preparation as JSON")
    parser.set_defaults(run=run)


def settings_from(args: argparse.Namespace) -> CompactionSettings:
    """Compaction settings from the defaults and the command-line overrides."""
    return CompactionSettings(reserve_tokens=args.reserve_tokens, keep_recent_tokens=args.keep_recent_tokens)


def refusal(path: list[Entry]) -> str:
    """Pi's message for a path it will not prepare."""
    return ALREADY_COMPACTED if path and path[-1].type == "compaction" else TOO_SMALL


def preview(prep: CompactionPreparation, instructions: str | None) -> CompactionPreview:
    """The ``--dry-run --json`` document (PROTOCOL.md "Command line")."""
    requests = summary_requests(prep, instructions)
    lists = prep.file_lists
    return CompactionPreview(
        first_kept_entry_id=prep.first_kept_entry_id,
        is_split_turn=prep.is_split_turn,
        tokens_before=prep.tokens_before,
        messages_to_summarize=list(prep.messages_to_summarize),
        turn_prefix_messages=list(prep.turn_prefix_messages),
        previous_summary=prep.previous_summary,
        read_files=list(lists.read_files),
        modified_files=list(lists.modified_files),
        serialized=requests.serialized,
        turn_prefix_serialized=requests.turn_prefix_serialized,
        prompt=requests.history_prompt or "",
        nothing_to_compact=prep.nothing_to_compact,
    )


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
    """Preview (``--dry-run``) a compaction; see the module docstring for exit codes."""
    if not args.dry_run:
        raise CliError(NO_SUMMARIZER, 1)
    session = open_session(session_path(args))
    path = session.path_to()
    prep = prepare_compaction(path, settings_from(args))
    if prep is None:
        raise CliError(refusal(path), 1)
    doc = preview(prep, args.instructions)
    if args.json:
        print_json(unstructure(doc))
    else:
        _print_text(prep, doc)
    return 0

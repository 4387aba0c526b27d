"""``pi-sessiond compact FILE [--dry-run] [...] [--json]``: compact the leaf's path (``pi/compact``).

The dry run prints the preparation exactly as ``pi/beforeCompact`` shows it
(the same service function builds both) and never writes. Exit codes: 0
whenever Pi 1.6.0 would return a preparation, 1 with Pi's refusal where it
returns none (``Already compacted`` when the newest entry is a compaction,
else ``Nothing to compact (session too small)``: an empty path or nothing to
summarize, e.g. every message fits in ``keepRecentTokens``), 2 for usage errors. Without
``--dry-run`` it runs the configured summarizer (offline unless settings.json
or the flags say otherwise), appends one compaction entry and prints the
summary and the token counts on stdout (progress on stderr). With
``--example`` it works on a temporary copy and keeps 6000 recent tokens
unless told otherwise, so there is always something to compact.
``--show-response`` also prints the summarizer's raw answers (before they are
checked and fitted into the summary; with ``--json``: ``summarizerResponses``).
"""

from __future__ import annotations

import argparse
import asyncio

from pi_protocol import CompactionPreview, CompactResult, unstructure
from pi_protocol.base import JsonDict
from pi_protocol.params import CompactParams
from pi_protocol.settings import CompactionSettings
from pi_sessiond.cli.common import (
    EXAMPLE_KEEP_RECENT,
    add_file_argument,
    add_quiet_argument,
    print_json,
    session_path,
)
from pi_sessiond.cli.local import local_daemon, running_daemon
from pi_sessiond.cli.progress import StderrProgress
from pi_sessiond.cli.responses import Recorder
from pi_sessiond.cli.runtime import add_summarizer_arguments, flag_settings

NAME = "compact"
HELP = "compact the leaf's path (--dry-run: show what would be summarized, write nothing)"


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative: {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--dry-run", action="store_true", help="print the preparation, write nothing")
    parser.add_argument("--instructions", metavar="TEXT", help="extra focus for the summary")
    defaults = CompactionSettings()
    parser.add_argument("--keep-recent-tokens", type=_count, metavar="N",
                        help=f"tokens of recent messages kept verbatim (default {defaults.keep_recent_tokens}; "
                             f"{EXAMPLE_KEEP_RECENT} with --example)")
    parser.add_argument("--reserve-tokens", type=_count, metavar="N",
                        help=f"tokens reserved for the summary (default {defaults.reserve_tokens})")
    parser.add_argument("--json", action="store_true", help="print the preparation / the pi/compact result as JSON")
    parser.add_argument("--show-response", action="store_true",
                        help="also print the summarizer's raw answers (what the model wrote, before the checks)")
    parser.add_argument("--force", action="store_true",
                        help="write even if another program (a running Pi) appended lately; lands on the newest leaf")
    add_quiet_argument(parser)
    add_summarizer_arguments(parser)


def settings_from(args: argparse.Namespace) -> JsonDict:
    """The flags as settings (``--example`` keeps fewer recent tokens unless told otherwise)."""
    keep = args.keep_recent_tokens
    if keep is None and args.example:
        keep = EXAMPLE_KEEP_RECENT
    compaction = {k: v for k, v in (("keepRecentTokens", keep), ("reserveTokens", args.reserve_tokens))
                  if v is not None}
    return flag_settings(args, {"compaction": compaction} if compaction else None)


def run(args: argparse.Namespace) -> int:
    """Preview (``--dry-run``) or run a compaction; see the module docstring for exit codes."""
    if not args.dry_run:
        return asyncio.run(_compact(args))
    with local_daemon(settings_from(args)) as local:
        info = local.open(session_path(args))
        doc = local.service.preview_compaction(
            CompactParams(session_id=info.session_id, custom_instructions=args.instructions))
    if args.json:
        print_json(unstructure(doc))
    else:
        _print_text(doc)
    return 0


def _print_text(doc: CompactionPreview) -> None:
    print(f"first kept entry: {doc.first_kept_entry_id}")
    print(f"split turn: {'yes' if doc.is_split_turn else 'no'}")
    print(f"tokens before: {doc.tokens_before}")
    print(f"messages to summarize: {len(doc.messages_to_summarize)}")
    print(f"turn prefix messages: {len(doc.turn_prefix_messages)}")
    print(f"previous summary: {'yes' if doc.previous_summary else 'no'}")
    print(f"read files: {len(doc.read_files)}  modified files: {len(doc.modified_files)}")
    print("(use --json for the serialized conversation and the full summarizer request)")


async def _compact(args: argparse.Namespace) -> int:
    path = session_path(args, writes=True)
    recorder = Recorder()
    async with running_daemon(settings_from(args), StderrProgress(quiet=args.quiet), recorder) as local:
        info = local.open(path, in_blocks=True)
        params = CompactParams(session_id=info.session_id, custom_instructions=args.instructions, force=args.force)
        result = await local.service.compact(params, local.progress)
        assert isinstance(result, CompactResult)  # no draft was asked for
    if args.json:
        extra = {"summarizerResponses": recorder.answers} if args.show_response else {}
        print_json({**unstructure(result), **extra})
        return 0
    print(result.entry.get("summary", ""))
    for n, answer in enumerate(recorder.answers if args.show_response else [], start=1):
        print(f"\n=== the summarizer's answer {n} of {len(recorder.answers)} " + "=" * 36)
        print(answer)
    where = "a temporary copy of the example" if args.example else str(path)
    print(f"\ncompacted {where}: context {result.tokens_before} -> {result.tokens_after} tokens")
    return 0

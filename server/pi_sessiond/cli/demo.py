"""``pi-sessiond demo``: compact a copy of the bundled example and show the context before and after.

Runs the configured summarizer (the offline one unless settings.json says
otherwise: no key, no network) through the same service as the daemon. The
example's context is ~21k tokens, so the demo keeps 6k recent tokens instead
of Pi's default 20k to have something to summarize; ``--keep-recent-tokens``
changes that. The copy is removed at the end unless ``--keep`` is given.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pi_protocol import CompactResult
from pi_protocol.params import CompactParams, GetContextParams, GetSettingsParams
from pi_sessiond.cli.common import EXAMPLE_KEEP_RECENT, add_quiet_argument
from pi_sessiond.cli.context import describe
from pi_sessiond.cli.local import running_daemon
from pi_sessiond.cli.progress import StderrProgress
from pi_sessiond.cli.runtime import add_summarizer_arguments, flag_settings
from pi_sessiond.examples import example_path

NAME = "demo"
HELP = "compact a copy of the bundled example and show the context before and after"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep-recent-tokens", type=int, default=EXAMPLE_KEEP_RECENT, metavar="N",
                        help=f"tokens of recent messages kept verbatim (default {EXAMPLE_KEEP_RECENT})")
    parser.add_argument("--keep", action="store_true", help="keep the compacted copy (its path is printed)")
    add_quiet_argument(parser)
    add_summarizer_arguments(parser)


def run(args: argparse.Namespace) -> int:
    folder = Path(tempfile.mkdtemp(prefix="pi-sessiond-demo-"))
    path = folder / example_path().name
    try:
        shutil.copyfile(example_path(), path)
        settings = flag_settings(args, {"compaction": {"keepRecentTokens": args.keep_recent_tokens}})
        code = asyncio.run(_demo(path, settings, StderrProgress(quiet=args.quiet)))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    if args.keep:
        print(f"The compacted copy is {path}: try `pi-sessiond tree {path}`.")
    else:
        print("The copy was removed; `pi-sessiond demo --keep` keeps it to look at.")
    return code


async def _demo(path: Path, settings: dict[str, Any], progress: StderrProgress) -> int:
    async with running_daemon(settings, progress) as local:
        service = local.service
        sid = local.open(path).session_id
        summarizer = service.get_settings(GetSettingsParams(session_id=sid)).settings["summarizer"]["provider"]
        print(f"Session: {path}")
        print(f"Summarizer: {summarizer}\n")
        before = service.get_context(GetContextParams(session_id=sid))
        _show("Before", before.messages, before.tokens)
        result = await service.compact(CompactParams(session_id=sid), progress)
        assert isinstance(result, CompactResult)  # no draft was asked for
        after = service.get_context(GetContextParams(session_id=sid))
    print("\n=== Summary written as a compaction entry " + "=" * 30)
    print(result.entry.get("summary", ""))
    print("=" * 72 + "\n")
    _show("After", after.messages, after.tokens)
    print(f"\nTokens: {result.tokens_before} before -> ~{result.tokens_after} after (Pi's estimate).")
    return 0


def _show(title: str, messages: Any, tokens: int) -> None:
    print(f"{title}: {len(messages)} messages in the context, ~{tokens} tokens")
    for message in list(messages)[:3]:
        print(f"   {describe(message)}")
    if len(messages) > 3:
        print(f"   … {len(messages) - 3} more")

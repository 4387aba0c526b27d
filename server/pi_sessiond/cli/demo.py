"""``pi-sessiond demo``: compact a copy of the bundled example and show before/after.

Runs the configured summarizer (the offline one unless settings.json says
otherwise: no key, no network). The example's context is ~21k tokens, so the
demo keeps 6k recent tokens instead of Pi's default 20k to have something to
summarize; ``--keep-recent-tokens`` changes that.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pi_protocol.settings import Settings
from pi_sessiond.cli.common import open_session
from pi_sessiond.cli.context import describe
from pi_sessiond.cli.runtime import add_summarizer_arguments, settings_for, summarizer_for
from pi_sessiond.compaction.tokens import estimate_context_tokens
from pi_sessiond.examples import example_path
from pi_sessiond.pipeline.compaction import compact
from pi_sessiond.store.session import Session

DEMO_KEEP_RECENT = 6000


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("demo", help="compact a copy of the bundled example and show the context before and after")
    parser.add_argument("--keep-recent-tokens", type=int, default=DEMO_KEEP_RECENT, metavar="N")
    add_summarizer_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="pi-sessiond-demo-"))
    path = workdir / example_path().name
    shutil.copyfile(example_path(), path)
    session = open_session(path)
    settings = settings_for(args, session.cwd, {"compaction": {"keepRecentTokens": args.keep_recent_tokens}})
    return asyncio.run(_demo(session, settings))


async def _demo(session: Session, settings: Settings) -> int:
    before = session.context()
    summarizer = summarizer_for(settings)
    print(f"Session: {session.path}")
    print(f"Summarizer: {summarizer.name}\n")
    _show("Before", before.messages, estimate_context_tokens(list(before.messages)).tokens)
    try:
        result = await compact(session, summarizer, settings=settings.compaction)
    finally:
        await summarizer.aclose()
    print("\n=== Summary written as a compaction entry " + "=" * 30)
    print(result.entry.data.get("summary", ""))
    print("=" * 72 + "\n")
    _show("After", session.context().messages, result.tokens_after)
    print(f"\nTokens: {result.tokens_before} before -> ~{result.tokens_after} after (Pi's estimate).")
    print(f"The compacted copy is {session.path}: try `pi-sessiond tree {session.path}`.")
    return 0


def _show(title: str, messages: Any, tokens: int) -> None:
    print(f"{title}: {len(messages)} messages in the context, ~{tokens} tokens")
    for message in list(messages)[:3]:
        print(f"   {describe(message)}")
    if len(messages) > 3:
        print(f"   … {len(messages) - 3} more")

"""``pi-sessiond stats FILE [--json]``: the ``pi/getStats`` result of a file."""

from __future__ import annotations

import argparse
from typing import Any

from pi_protocol import unstructure
from pi_sessiond.cli.common import add_file_argument, open_session, print_json, session_path
from pi_sessiond.service.stats import session_stats
from pi_sessiond.settings import load_settings


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("stats", help="token usage, cost, message counts and context size of the leaf")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the pi/getStats result as JSON")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    session = open_session(session_path(args))
    stats = session_stats(session, load_settings(session.cwd or None).settings)
    if args.json:
        print_json(unstructure(stats))
        return 0
    t = stats.tokens
    print(f"tokens: input {t.input}, output {t.output}, cache read {t.cache_read}, cache write {t.cache_write}")
    print(f"total: {t.total} tokens, cost ${stats.cost:.4f}")
    counts = ", ".join(f"{k} {v}" for k, v in stats.message_counts.items())
    print(f"messages: {counts}")
    print(f"compactions: {stats.compactions}, branch summaries: {stats.branch_summaries}")
    if stats.context_tokens is None:
        print(f"context: unknown until the next answer (after a compaction) / {stats.context_window}")
    else:
        print(f"context: {stats.context_tokens} / {stats.context_window} ({stats.context_percent or 0:.1f}%)")
    return 0

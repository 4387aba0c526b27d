"""``pi-sessiond stats FILE [--json]``: token usage, cost, message counts and context size (``pi/getStats``)."""

from __future__ import annotations

import argparse

from pi_protocol import unstructure
from pi_protocol.params import SessionParams
from pi_sessiond.cli.common import add_file_argument, print_json, session_path
from pi_sessiond.cli.local import local_daemon

NAME = "stats"
HELP = "token usage, cost, message counts and context size"


def configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help="print the pi/getStats result as JSON")


def run(args: argparse.Namespace) -> int:
    with local_daemon() as local:
        info = local.open(session_path(args))
        stats = local.service.get_stats(SessionParams(session_id=info.session_id))
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

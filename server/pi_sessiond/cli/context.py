"""``pi-sessiond context FILE [--leaf ID] [--tail N] [--json]``: the LLM context of a leaf (``pi/getContext``).

``--tail N`` prints only the last N messages (the counts above them still cover the whole context).
"""

from __future__ import annotations

import argparse
from typing import Any

from pi_protocol import ContextResult, unstructure
from pi_protocol.params import GetContextParams
from pi_protocol.settings import Tokenizer
from pi_sessiond.cli.common import add_file_argument, preview, print_json, session_path
from pi_sessiond.cli.local import local_daemon
from pi_sessiond.estimators import ESTIMATOR_NAMES

NAME = "context"
HELP = "the LLM context of the leaf (or --leaf ID), as Pi builds it"


def configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--leaf", metavar="ID", help="build the context of this entry instead of the leaf")
    parser.add_argument("--json", action="store_true", help="print the pi/getContext result as JSON")
    parser.add_argument("--tail", type=_positive, metavar="N", help="print only the last N messages (text output)")
    parser.add_argument("--tokenizer", choices=ESTIMATOR_NAMES,
                        help="how to count tokens (default: settings.tokenizer, else pi = Pi's own estimate)")


def context_of(args: argparse.Namespace, tokenizer: Tokenizer | None = None) -> ContextResult:
    """The ``pi/getContext`` result for FILE (``--leaf``: of that entry)."""
    settings = {"tokenizer": tokenizer} if tokenizer else {}
    with local_daemon(settings) as local:
        info = local.open(session_path(args))
        return local.service.get_context(GetContextParams(session_id=info.session_id, leaf_id=args.leaf))


def run(args: argparse.Namespace) -> int:
    result = context_of(args, args.tokenizer)
    if args.json:
        print_json(unstructure(result))
        return 0
    model = result.model or {}
    print(f"model: {model.get('provider', '?')}/{model.get('modelId', '?')}  thinking: {result.thinking_level}")
    print(f"messages: {len(result.messages)}  tokens: {result.tokens}")
    first = max(0, len(result.messages) - args.tail) if args.tail is not None else 0
    if first:
        print(f"  … {first} earlier messages (--tail {args.tail})")
    for i, message in enumerate(result.messages[first:], start=first):
        print(f"{i:5d} {describe(message)}")
    return 0


def _positive(text: str) -> int:
    """A whole number >= 1 (argparse type)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def describe(message: Any) -> str:
    """``role: preview`` for one context message."""
    if not isinstance(message, dict):
        return "?"
    role = str(message.get("role", "?"))
    return f"{role:17s} {preview(message_text(message))}"


def message_text(message: dict[str, Any]) -> str:
    """A short human-readable rendering of a message's content."""
    role = message.get("role")
    if role in ("compactionSummary", "branchSummary"):
        return str(message.get("summary", ""))
    if role == "bashExecution":
        return f"$ {message.get('command', '')}"
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "thinking":
            parts.append(f"(thinking) {block.get('thinking', '')}")
        elif kind == "toolCall":
            parts.append(f"{block.get('name', '?')}(…)")
        elif kind == "image":
            parts.append("[image]")
    return " ".join(parts)

"""Context size and session statistics (reference §4.2, §4.4).

The context size of a leaf never counts usage from before the newest
compaction on its path: walking up from the leaf, if a compaction comes
before any assistant message with valid usage, the usage figures in the
context describe the old, uncompacted context, so every message is estimated
instead (and :func:`usage_is_fresh` is false: ``pi/getStats`` reports
``contextTokens: null`` then, as Pi's ``getContextUsage`` does). The walk stops
at the first of the two, so it is cheap on a long, live session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_protocol.results import StatsResult, TokenTotals
from pi_protocol.settings import Settings
from pi_sessiond.compaction.tokens import assistant_usage
from pi_sessiond.estimators import context_tokens, get_estimator
from pi_sessiond.service.models import context_window
from pi_sessiond.store.session import Session

JsonDict = dict[str, Any]


def usage_is_fresh(session: Session, leaf_id: str | None = None) -> bool | None:
    """``True``: newest valid usage is after the newest compaction; ``False``: a compaction
    comes first; ``None``: neither is on the path."""
    for entry in session.tree.iter_up(leaf_id if leaf_id is not None else session.leaf_id):
        if entry.type == "compaction":
            return False
        if entry.type == "message" and assistant_usage(entry.message) is not None:
            return True
    return None


def estimate_messages(messages: Sequence[JsonDict], name: str) -> int:
    """Every message estimated by the estimator ``name`` (no usage figures)."""
    estimator = get_estimator(name, messages=messages)
    return sum(estimator.estimate(m) for m in messages)


def estimator_name(name: str, messages: Sequence[JsonDict] = ()) -> str:
    """What the estimator called ``name`` really computes (``cl100k``/``calibrated`` may fall back)."""
    return get_estimator(name, messages=messages).name


def leaf_context_tokens(session: Session, messages: Sequence[JsonDict], name: str, leaf_id: str | None = None) -> int:
    """The context size of the leaf whose context is ``messages`` (see the module docstring)."""
    if usage_is_fresh(session, leaf_id) is False:
        return estimate_messages(messages, name)
    return context_tokens(messages, name).tokens


def session_stats(session: Session, settings: Settings) -> StatsResult:
    """Pi's ``getSessionStats`` over the current context, plus our counts and the context usage."""
    context = session.context()
    messages = list(context.messages)
    counts, totals, cost = _count(messages)
    path = session.path_to()
    window = context_window(settings, context.model)
    tokens: int | None = None
    if usage_is_fresh(session) is not False:
        tokens = context_tokens(messages, settings.tokenizer).tokens
    return StatsResult(
        tokens=totals,
        cost=cost,
        message_counts=counts,
        compactions=sum(1 for e in path if e.type == "compaction"),
        branch_summaries=sum(1 for e in path if e.type == "branch_summary"),
        context_tokens=tokens,
        context_window=window,
        context_percent=(tokens / window * 100) if tokens is not None and window > 0 else None,
    )


def _count(messages: Sequence[JsonDict]) -> tuple[dict[str, int], TokenTotals, float]:
    counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0,
              "totalMessages": len(messages)}
    parts = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for message in messages:
        role = message.get("role")
        if role == "user":
            counts["userMessages"] += 1
        elif role == "toolResult":
            counts["toolResults"] += 1
        elif role == "assistant":
            counts["assistantMessages"] += 1
            content = message.get("content")
            blocks = content if isinstance(content, list) else []
            counts["toolCalls"] += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall")
            cost += _add_usage(parts, message.get("usage"))
    totals = TokenTotals(input=parts["input"], output=parts["output"], cache_read=parts["cacheRead"],
                         cache_write=parts["cacheWrite"], total=sum(parts.values()))
    return counts, totals, cost


def _add_usage(parts: dict[str, int], usage: Any) -> float:
    if not isinstance(usage, dict):
        return 0.0
    for key in parts:
        value = usage.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool):
            parts[key] += int(value)
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    return float(total) if isinstance(total, int | float) and not isinstance(total, bool) else 0.0


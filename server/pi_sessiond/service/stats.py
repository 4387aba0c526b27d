"""Context size and session statistics, as Pi 1.6.0 counts them.

The context size of a leaf never counts usage from before the newest
compaction on its path: walking up from the leaf, if a compaction comes
before any assistant message with valid usage, the usage figures in the
context describe the old, uncompacted context, so every message is estimated
instead (and :func:`usage_is_fresh` is false: ``pi/getStats`` reports
``contextTokens: null`` then, as Pi's ``getContextUsage`` does). The walk stops
at the first of the two, so it is cheap on a long, live session.

:func:`projected_context_tokens` is Pi 1.6.0's ``estimateProjectedContextTokens``
(``estimatedContextTokens`` of ``pi/getStats`` and ``pi/append``): a usage
counts only if no ``context_edit`` or compaction comes after it; otherwise the
replayed current system message once plus every other projected message.

Session totals (:func:`session_stats`) walk the whole file, every branch and
what was compacted away, as 1.6.0's ``getSessionStats``: the usage of
assistant and tool-result messages, ``usage`` entries, and compactions and
branch summaries; message counts over every message entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_protocol.base import JsonDict
from pi_protocol.results import StatsResult, TokenTotals
from pi_protocol.settings import Settings
from pi_sessiond.compaction.tokens import assistant_usage, pure_estimate
from pi_sessiond.estimators import context_tokens, get_estimator
from pi_sessiond.service.models import context_window
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session


def usage_is_fresh(session: Session, leaf_id: str | None = None) -> bool | None:
    """``True``: an assistant answer with valid usage that the context still shows comes after the
    newest compaction (or there is none); ``False``: a compaction and no such answer after it;
    ``None``: neither is on the path.

    Pi 1.6.0 (``getContextUsage``) looks for that answer in the projection, so an answer a later
    ``context_edit`` omitted does not count; the projection is built only when the walk met an edit.
    """
    leaf = leaf_id if leaf_id is not None else session.leaf_id
    answers: list[str] = []
    edited = False
    for entry in session.tree.iter_up(leaf):
        if entry.type == "compaction":
            break
        edited = edited or entry.type == "context_edit"
        if entry.type == "message" and assistant_usage(entry.message) is not None:
            if not edited:
                return True
            answers.append(entry.id)
    else:
        return True if answers else None
    if not answers:
        return False
    shown = {p.entry.id for p in session.projection(leaf).entries
             if any(assistant_usage(m) is not None for m in p.messages)}
    return any(a in shown for a in answers)


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


def usage_is_trusted(session: Session, leaf_id: str | None = None) -> bool:
    """Whether the newest valid usage on the path comes after its newest ``context_edit`` and compaction."""
    for entry in session.tree.iter_up(leaf_id if leaf_id is not None else session.leaf_id):
        if entry.type in ("compaction", "context_edit"):
            return False
        if entry.type == "message" and assistant_usage(entry.message) is not None:
            return True
    return False


def projected_context_tokens(
    session: Session, name: str, leaf_id: str | None = None, *, usage_based: int | None = None
) -> int:
    """Pi 1.6.0's ``estimateProjectedContextTokens`` of the leaf, with the estimator ``name``.

    ``usage_based``: the leaf's :func:`leaf_context_tokens` if the caller has it
    (it is the answer whenever the usage is trusted; saves a second pass).
    """
    trusted = usage_is_trusted(session, leaf_id)
    if trusted and usage_based is not None:
        return usage_based
    messages = (session.context() if leaf_id is None else session.context(leaf_id)).messages  # the projection's
    if trusted:
        return context_tokens(messages, name).tokens
    return pure_estimate(messages, get_estimator(name, messages=messages).estimate)


def session_stats(session: Session, settings: Settings) -> StatsResult:
    """Pi 1.6.0's ``getSessionStats`` (whole file), plus our counts of the path and the context usage."""
    context = session.context()
    counts, totals, cost = count_entries(session.entries)
    path = session.path_to()
    window = context_window(settings, context.model)
    estimated = projected_context_tokens(session, settings.tokenizer)
    tokens = estimated if usage_is_fresh(session) is not False else None
    return StatsResult(
        tokens=totals,
        cost=cost,
        message_counts=counts,
        compactions=sum(1 for e in path if e.type == "compaction"),
        branch_summaries=sum(1 for e in path if e.type == "branch_summary"),
        context_tokens=tokens,
        context_window=window,
        context_percent=(tokens / window * 100) if tokens is not None and window > 0 else None,
        estimated_context_tokens=estimated,
    )


def count_entries(entries: Sequence[Entry]) -> tuple[dict[str, int], TokenTotals, float]:
    """Message counts, token totals and cost of ``entries`` (see the module docstring)."""
    counts = {"userMessages": 0, "assistantMessages": 0, "toolCalls": 0, "toolResults": 0, "totalMessages": 0}
    parts = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    cost = 0.0
    for entry in entries:
        if entry.type in ("usage", "compaction", "branch_summary"):
            cost += _add_usage(parts, entry.data.get("usage"))
        if entry.type != "message" or entry.message is None:
            continue
        counts["totalMessages"] += 1
        cost += _count_message(counts, parts, entry.message)
    totals = TokenTotals(input=parts["input"], output=parts["output"], cache_read=parts["cacheRead"],
                         cache_write=parts["cacheWrite"], total=sum(parts.values()))
    return counts, totals, cost


def _count_message(counts: dict[str, int], parts: dict[str, int], message: JsonDict) -> float:
    role = message.get("role")
    if role == "user":
        counts["userMessages"] += 1
    elif role == "toolResult":
        counts["toolResults"] += 1
        return _add_usage(parts, message.get("usage"))
    elif role == "assistant":
        counts["assistantMessages"] += 1
        content = message.get("content")
        blocks = content if isinstance(content, list) else []
        counts["toolCalls"] += sum(1 for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall")
        return _add_usage(parts, message.get("usage"))
    return 0.0


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

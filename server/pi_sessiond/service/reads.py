"""The read-only requests of one session: its context, tree, entries, stats and token estimates.

Each takes the request's :class:`Scope` and holds the session's ``lock`` while
it reads (the JSON-RPC layer runs them in worker threads), so a commit never
changes a tree being read. ``pi/getContext`` of a session still read
tail-first is answered from the tail when the tail holds the leaf's context.
"""

from __future__ import annotations

from typing import Literal

from pi_protocol import ContextResult
from pi_protocol.base import JsonDict
from pi_protocol.params import EstimateTokensParams, GetContextParams, GetEntriesParams, GetTreeParams
from pi_protocol.results import EntriesResult, EstimateTokensResult, StatsResult, TreeResult
from pi_sessiond.compaction.provider_messages import to_anthropic, to_openai
from pi_sessiond.errors import InvalidParams
from pi_sessiond.service import stats, views
from pi_sessiond.service.models import context_window
from pi_sessiond.service.sessions.scope import Scope, require_entry
from pi_sessiond.settings import compaction_for
from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.session import Session

ContextFormat = Literal["pi", "openai", "anthropic"]


def early_context(scope: Scope, params: GetContextParams) -> ContextResult | None:
    """The context of a session still loading, from its tail; ``None`` when the whole file is needed."""
    reading = scope.opened.reading()
    early = reading.early_context(params.leaf_id) if reading is not None else None
    if reading is None or early is None:
        return None
    return context_result(scope, reading.provisional, early, None, params.format)


def context(scope: Scope, params: GetContextParams) -> ContextResult:
    """``pi/getContext`` of the whole session: Pi's ``buildSessionContext`` plus its size."""
    session = scope.session
    with session.lock:
        if params.leaf_id is not None:
            require_entry(session, params.leaf_id, "leafId")
        built = session.context() if params.leaf_id is None else session.context(params.leaf_id)
        return context_result(scope, session, built, params.leaf_id, params.format)


def context_result(scope: Scope, session: Session, built: SessionContext, leaf_id: str | None,
                   fmt: ContextFormat = "pi") -> ContextResult:
    """The wire result of a built context in the format asked for, with its size as ``pi/append`` counts it,
    the window, the threshold (``contextWindow - reserveTokens`` for the leaf's model: never waits for a
    tail-first open's whole file) and whether the size is above it (``pi/append``'s ``shouldCompact``)."""
    settings = scope.settings
    tokens = stats.leaf_context_tokens(session, built.messages, settings.tokenizer, leaf_id)
    window = context_window(settings, built.model)
    threshold = window - compaction_for(settings.compaction, built.model).reserve_tokens
    messages: list[JsonDict] = list(built.messages)
    system = None
    if fmt == "openai":
        messages = to_openai(messages)
    elif fmt == "anthropic":
        system, messages = to_anthropic(messages)
    return ContextResult(messages=messages, thinking_level=built.thinking_level, model=built.model, tokens=tokens,
                         context_window=window, threshold=threshold, over_threshold=tokens > threshold, system=system)


def tree(scope: Scope, params: GetTreeParams) -> TreeResult:
    """``pi/getTree``: one page of the nodes, depth-first in Pi's order."""
    session = scope.session
    with session.lock:
        return views.tree(session, params.root_id, params.offset, params.limit)


def entries(scope: Scope, params: GetEntriesParams) -> EntriesResult:
    """``pi/getEntries``: by ``ids``, after ``since`` in file order, or the path segment ``fromId`` .. ``toId``."""
    session = scope.session
    with session.lock:
        if params.ids is not None:
            return EntriesResult(entries=views.entries_by_ids(session, params.ids))
        if params.since is not None:
            return EntriesResult(entries=views.entries_since(session, params.since))
        return EntriesResult(entries=views.path_segment(session, params.from_id, params.to_id))


def session_stats(scope: Scope) -> StatsResult:
    """``pi/getStats``."""
    with scope.session.lock:
        return stats.session_stats(scope.session, scope.settings)


def estimate_text(text: str, tokenizer: str) -> EstimateTokensResult:
    """``pi/estimateTokens`` of a text, counted as one user message."""
    message = {"role": "user", "content": text}
    return EstimateTokensResult(tokens=stats.estimate_messages([message], tokenizer),
                                estimator=stats.estimator_name(tokenizer, [message]))


def estimate_leaf(scope: Scope, params: EstimateTokensParams) -> EstimateTokensResult:
    """``pi/estimateTokens`` of a leaf's context (the session's leaf without ``leafId``)."""
    session, name = scope.session, scope.settings.tokenizer
    with session.lock:
        if params.leaf_id is not None:
            require_entry(session, params.leaf_id, "leafId")
        messages = (session.context() if params.leaf_id is None else session.context(params.leaf_id)).messages
        tokens = stats.leaf_context_tokens(session, messages, name, params.leaf_id)
    return EstimateTokensResult(tokens=tokens, estimator=stats.estimator_name(name, messages))


def estimate(scope: Scope | None, params: EstimateTokensParams, tokenizer: str) -> EstimateTokensResult:
    """``pi/estimateTokens`` of a text (with the session's tokenizer, else ``tokenizer``) or of a leaf's context."""
    if params.text is not None:
        return estimate_text(params.text, scope.settings.tokenizer if scope is not None else tokenizer)
    if scope is None:
        raise InvalidParams("text or sessionId: one of them is required")
    return estimate_leaf(scope, params)

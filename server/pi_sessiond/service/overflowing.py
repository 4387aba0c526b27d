"""``pi/reportOverflow``: recover whenever recovery is possible (``Daemon.report_overflow`` runs the rules).

Rules, in order:
1. ``compaction.enabled`` false: :class:`NothingToCompact`.
2. A compaction running for the session is waited for, never answered
   ``busy``; cancelling the request stops only the wait.
3. Already fits: when nothing but failed answers (assistant messages that
   ended in ``error`` or ``aborted``) and labels came after the path's newest
   compaction or masking edit, that entry was not relied on by an earlier
   report, and the context is now at or below the threshold (``contextWindow -
   reserveTokens``), the answer is success with ``alreadyFits: true`` and
   nothing more is done: the request that overflowed was built before it.
4. Otherwise Pi's rule: one compact-and-retry attempt until the next user
   message or successful answer (a second is :class:`NothingToCompact`, with
   ``pi/compactionFailed`` and no started/ended pair), else an overflow
   compaction with ``willRetry: true``.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from pi_protocol import CompactResult
from pi_sessiond.service import stats
from pi_sessiond.service.models import context_window
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.store.entry import Entry

SKIPPED = frozenset({"label", "custom", "session_info", "model_change", "thinking_level_change"})


def already_fits(scope: Scope) -> CompactResult | None:
    """Rule 3: the success answer when a compaction already made the context fit, else ``None``."""
    opened, session = scope.opened, scope.session
    with session.lock:
        landed = _landed(session.tree.iter_up(session.leaf_id))
        if landed is None or landed.id == opened.overflow_answered:
            return None
        context = session.context()
        tokens = stats.leaf_context_tokens(session, context.messages, scope.settings.tokenizer)
        if tokens > context_window(scope.settings, context.model) - scope.compaction.reserve_tokens:
            return None
        opened.overflow_answered = landed.id
        before = landed.data.get("tokensBefore")
        return CompactResult(entry=landed.data, tokens_before=before if isinstance(before, int) else tokens,
                             tokens_after=tokens, estimated_tokens_after=tokens, already_fits=True)


def answered(scope: Scope, result: CompactResult) -> CompactResult:
    """Rule 4's answer: the overflow compaction, never relied on by a later report as already fitting."""
    entry_id = result.entry.get("id") if isinstance(result.entry, dict) else None
    scope.opened.overflow_answered = entry_id if isinstance(entry_id, str) else None
    return attrs.evolve(result, already_fits=False)


def _landed(path: Iterable[Entry]) -> Entry | None:
    """The newest compaction or masking edit with only failed answers and bookkeeping after it."""
    for entry in path:
        if entry.type in ("compaction", "context_edit"):
            return entry
        if entry.type in SKIPPED:
            continue
        failed = entry.role == "assistant" and (entry.message or {}).get("stopReason") in ("error", "aborted")
        if not failed:
            return None
    return None

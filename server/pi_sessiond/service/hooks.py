"""The client's hooks, in one place: ``pi/beforeCompact``, ``pi/beforeTree``, ``pi/reviewSummary``.

Contracts:
- A hook is asked only when the client declared it, with a deadline
  (``daemon.hookTimeoutSeconds``; ``daemon.reviewTimeoutSeconds`` for the
  review). A hook that fails, times out, answers ``null`` or answers
  nonsense is logged and ignored: the pipeline goes on as if undeclared.
  Cancellation is never swallowed.
- Answers become pipeline inputs here: a ``beforeCompact`` compaction becomes
  the entry to store (``fromHook: true``; ``firstKeptEntryId: null`` a
  retain-none compaction, as Pi 1.6.0 writes it; absent, the prepared one), a ``beforeTree`` summary a
  :class:`~pi_sessiond.pipeline.navigation.BranchSummary`, a hook's usage a
  :class:`~pi_protocol.Usage` (or ``None`` when unusable).
- A cancelling ``beforeCompact`` and a rejecting review raise
  :class:`~pi_sessiond.errors.Rejected`; nothing is written then.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, TypeVar

import attrs

from pi_protocol import CompactionEntry, StructureError, Usage, methods, structure, unstructure
from pi_protocol.base import JsonDict
from pi_protocol.params import NavigateTreeParams
from pi_protocol.results import (
    BeforeCompactAnswer,
    BeforeCompactParams,
    BeforeTreeAnswer,
    BeforeTreeParams,
    HookCompaction,
    HookPreparation,
    Reason,
    ReviewSummaryAnswer,
    ReviewSummaryParams,
)
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.errors import Rejected
from pi_sessiond.pipeline.compaction import Reviewer, preview, session_reasoning
from pi_sessiond.pipeline.navigation import BranchSummary, NavigationPlan
from pi_sessiond.pipeline.requests import OutputLimit
from pi_sessiond.service.interface import HookClient
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.settings.redact import redact_settings
from pi_sessiond.store.session import Session

T = TypeVar("T")
log = logging.getLogger("pi_sessiond.service.hooks")


async def ask(client: HookClient, hook: str, method: str, payload: Any, answer: type[T],
              timeout: float | None) -> T | None:
    """Ask a declared hook; ``None`` when undeclared, failing, late, ``null`` or malformed."""
    if not client.declared(hook):
        return None
    try:
        async with asyncio.timeout(timeout):
            raw = await client.request(method, unstructure(payload), timeout)
    except TimeoutError:
        log.warning("hook %s timed out after %ss; ignored", hook, timeout)
        return None
    except Exception as exc:
        log.warning("hook %s failed; ignored: %s", hook, exc)
        return None
    if raw is None:
        return None
    try:
        return structure(raw, answer)
    except StructureError as exc:
        log.warning("hook %s answered something unusable; ignored: %s", hook, exc)
        return None


def hook_usage(value: Any) -> Usage | None:
    """A hook's ``usage`` as :class:`Usage`, or ``None`` when absent or unusable."""
    if value is None:
        return None
    try:
        return structure(value, Usage)
    except StructureError as exc:
        log.warning("ignoring a hook's usage: %s", exc)
        return None


# ------------------------------------------------------------- beforeCompact
async def before_compact(
    client: HookClient, scope: Scope, prep: CompactionPreparation, reason: Reason, will_retry: bool,
    instructions: str | None, limit: OutputLimit | None,
) -> JsonDict | None:
    """``pi/beforeCompact``: ``None`` to go on, the entry to store, or :class:`Rejected`."""
    if not client.declared("beforeCompact"):
        return None
    payload = BeforeCompactParams(
        session_id=scope.key, reason=reason, will_retry=will_retry, custom_instructions=instructions,
        preparation=hook_preparation(scope, prep, instructions, limit),
    )
    answer = await ask(client, "beforeCompact", methods.BEFORE_COMPACT, payload, BeforeCompactAnswer,
                       scope.settings.daemon.hook_timeout_seconds)
    if answer is None:
        return None
    if answer.cancel:
        raise Rejected("the beforeCompact hook cancelled the compaction")
    if answer.compaction is None:
        return None
    return hook_entry(scope.session, prep, answer.compaction)


def hook_preparation(
    scope: Scope, prep: CompactionPreparation, instructions: str | None, limit: OutputLimit | None
) -> HookPreparation:
    """The preview of ``prep`` (as ``compact --dry-run`` prints it) plus the settings in force.

    ``settings.compaction`` is the preparation's own: resolved for the
    session's model (``compaction.modelOverrides``), as Pi's ``preparation.settings``.
    """
    shown = preview(prep, instructions, session_reasoning(scope.session), limit)
    in_force = redact_settings(unstructure(attrs.evolve(scope.settings, compaction=prep.settings)))
    return HookPreparation(**{f.name: getattr(shown, f.name) for f in attrs.fields(type(shown))}, settings=in_force)


def hook_entry(session: Session, prep: CompactionPreparation, given: HookCompaction) -> JsonDict | None:
    """The entry for a hook's compaction (``fromHook: true``), or ``None`` when it is unusable."""
    if not given.summary.strip():
        log.warning("beforeCompact returned an empty summary; ignored")
        return None
    first_kept = given.first_kept_entry_id
    if first_kept is None or first_kept not in {e.id for e in session.path_to()}:
        if first_kept is not None:
            log.warning("beforeCompact firstKeptEntryId %r is not on the path; using the prepared one", first_kept)
        first_kept = prep.first_kept_entry_id
    entry = CompactionEntry(
        summary=given.summary,
        first_kept_entry_id=first_kept,
        tokens_before=given.tokens_before if given.tokens_before is not None else prep.tokens_before,
        details=given.details,
        from_hook=True,
        usage=hook_usage(given.usage),
    )
    data: JsonDict = unstructure(entry)
    if given.retains_none():
        data["firstKeptEntryId"] = None  # written as the entry's own id (pipeline.compaction.write_compaction)
    return data


# ---------------------------------------------------------------- beforeTree
async def before_tree(
    client: HookClient, scope: Scope, params: NavigateTreeParams, plan: NavigationPlan
) -> BeforeTreeAnswer | None:
    """``pi/beforeTree`` about the branch ``plan`` abandons; ``None`` to go on as asked."""
    if not client.declared("beforeTree"):
        return None
    branch = plan.collected(scope.session)
    payload = BeforeTreeParams(
        session_id=scope.key,
        target_id=params.target_id,
        old_leaf_id=plan.old_leaf_id,
        common_ancestor_id=branch.common_ancestor_id,
        entries_to_summarize=[e.data for e in branch.entries],
        user_wants_summary=params.summarize,
        custom_instructions=params.custom_instructions,
        replace_instructions=params.replace_instructions,
        label=params.label,
    )
    return await ask(client, "beforeTree", methods.BEFORE_TREE, payload, BeforeTreeAnswer,
                     scope.settings.daemon.hook_timeout_seconds)


def supplied_summary(answer: BeforeTreeAnswer | None) -> BranchSummary | None:
    """The branch summary a ``beforeTree`` answer supplies (stored verbatim), or ``None``."""
    if answer is None or answer.summary is None or not answer.summary.summary.strip():
        return None
    given = answer.summary
    return BranchSummary(summary=given.summary, details=given.details, usage=hook_usage(given.usage), from_hook=True)


# ------------------------------------------------------------- reviewSummary
async def review(
    client: HookClient, scope: Scope, kind: Any, summary: str, tokens_before: int, tokens_after: int
) -> str:
    """``pi/reviewSummary``: the summary to write (edited or not); :class:`Rejected` on reject."""
    payload = ReviewSummaryParams(session_id=scope.key, kind=kind, summary=summary, tokens_before=tokens_before,
                                  estimated_tokens_after=tokens_after)
    answer = await ask(client, "reviewSummary", methods.REVIEW_SUMMARY, payload, ReviewSummaryAnswer,
                       scope.settings.daemon.review_timeout_seconds)
    if answer is None or answer.action == "accept":
        return summary
    if answer.action == "reject":
        raise Rejected("the reviewer rejected the summary")
    if answer.summary is None or not answer.summary.strip():
        log.warning("reviewSummary edit without a summary; keeping the original")
        return summary
    return answer.summary


def reviewer(client: HookClient, scope: Scope, kind: Any) -> Reviewer | None:
    """The pipeline's ``review`` step for a ``kind`` of summary; ``None`` when no review hook is declared."""
    if not client.declared("reviewSummary"):
        return None

    async def reviewed(text: str, before: int, after: int) -> str:
        return await review(client, scope, kind, text, before, after)

    return reviewed

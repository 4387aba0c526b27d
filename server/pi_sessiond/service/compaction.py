"""Compaction requests: ``pi/compact``, ``pi/reportOverflow`` and auto-compaction.

The pipeline is ``pipeline.compaction.compact``; this module plugs the
client's hooks (``service.hooks``) into it (``pi/beforeCompact`` as its
``supply``: cancel / a supplied compaction / go on; ``pi/reviewSummary`` as
its ``review``: accept / edit / reject), runs it as a job with a progress bar
and sends the notifications. The pipeline's leaf re-check decides what
appends during a summary may do (see its docstring). Before anything runs,
the ``liveWriter`` guard (``service.livewriter``) refuses a compaction of a
session another program appended to lately, unless ``force``.
The file's writability is checked before the summarizer is asked (a
``locked`` or ``writeFailed`` answer costs no model call).
A draft kept for the session (``compaction.prepareAt``, ``pi/compact {draft:
true}``) is written instead of a new summary where it does the same job
(``service.preparing.reuse``).
Anything that stops before the append leaves the session untouched, and every
attempt that wrote nothing (manual, threshold or overflow: a failure, a
refusal, a cancellation) is announced by one ``pi/compactionFailed``, as Pi
1.6.0's ``session_compact_failed``; a request refused before it ran (``busy``)
is not an attempt.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

import attrs

from pi_protocol import CompactionPreview, CompactResult, Gate, GateAddition, methods
from pi_protocol.params import CompactParams, ReportOverflowParams
from pi_protocol.results import (
    Compacted,
    CompactionEnded,
    CompactionFailed,
    CompactionStarted,
    Reason,
    SessionChanged,
)
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.errors import NothingToCompact, PiError, Rejected
from pi_sessiond.pipeline.compaction import compact, refusal, session_reasoning
from pi_sessiond.pipeline.compaction import preview as preview_of
from pi_sessiond.service import hooks, masking
from pi_sessiond.service.core import Core, apply_durability
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.livewriter import check_live_writer
from pi_sessiond.service.registry import OpenSession
from pi_sessiond.summarizers.gate import Added

T = TypeVar("T")
JsonDict = dict[str, Any]
Report = Callable[[str, int | None], None]
log = logging.getLogger("pi_sessiond.service.compaction")
OVERFLOW_RETRIED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)
FAILURE_PREFIX: dict[Reason, str] = {
    "manual": "Compaction failed",
    "threshold": "Auto-compaction failed",
    "overflow": "Context overflow recovery failed",
}


# ------------------------------------------------------------------ requests
async def manual(core: Core, opened: OpenSession, params: CompactParams, progress: ProgressFactory) -> CompactResult:
    """``pi/compact``: a job of this session, with a progress bar."""

    async def work() -> CompactResult:
        return await with_progress(
            progress, "Compacting session", params.work_done_token,
            lambda report: compact_session(core, opened, reason="manual", will_retry=False,
                                           instructions=params.custom_instructions, report=report,
                                           force=params.force),
        )

    return await core.jobs.run(opened.key, "compaction", "manual", work)


async def overflow(
    core: Core, opened: OpenSession, params: ReportOverflowParams, progress: ProgressFactory
) -> CompactResult:
    """``pi/reportOverflow``: compact with reason ``overflow`` and ``willRetry: true``."""
    settings = core.settings_for(opened)
    if not settings.compaction.enabled:
        raise NothingToCompact("auto-compaction is disabled (compaction.enabled is false)")
    core.jobs.check(opened.key)
    if opened.overflow_attempted:
        end = CompactionEnded(session_id=opened.key, reason="overflow", will_retry=False, error=OVERFLOW_RETRIED)
        core.notify(methods.COMPACTION_ENDED, end)
        refused = NothingToCompact(OVERFLOW_RETRIED)
        core.notify(methods.COMPACTION_FAILED, failure(opened.key, "overflow", refused, message=OVERFLOW_RETRIED))
        raise refused
    opened.overflow_attempted = True

    async def work() -> CompactResult:
        return await with_progress(
            progress, "Compacting session (context overflow)", params.work_done_token,
            lambda report: automatic(core, opened, "overflow", report),
        )

    return await core.jobs.run(opened.key, "compaction", "overflow", work)


def preview(core: Core, opened: OpenSession, instructions: str | None) -> CompactionPreview:
    """``compact --dry-run``: the preparation of the leaf as ``pi/beforeCompact`` shows it (without settings).

    It exists exactly where Pi 1.6.0 returns a preparation; :class:`NothingToCompact`
    (with Pi's reason) where Pi returns none, which includes nothing to summarize.
    """
    session = opened.session
    path = session.path_to()
    settings = core.settings_for(opened)
    prep = prepare_compaction(path, core.compaction_settings(opened, settings), session.projection())
    if prep is None:
        raise NothingToCompact(refusal(path))
    return preview_of(prep, instructions, session_reasoning(session), core.run_options(settings).limit)


def start_threshold(core: Core, opened: OpenSession) -> None:
    """Start a background auto-compaction (reason ``threshold``), once per turn, never beside a job."""
    if opened.turn_compacted or core.jobs.get(opened.key) is not None:
        return
    opened.turn_compacted = True

    async def work() -> None:
        try:
            if core.background_progress is None:
                await automatic(core, opened, "threshold", _ignore)
            else:
                await with_progress(core.background_progress, "Compacting session (auto)", None,
                                    lambda report: automatic(core, opened, "threshold", report))
        except PiError as exc:
            log.info("auto-compaction of %s did not complete: %s", opened.key, exc.message)

    try:
        core.jobs.start(opened.key, "compaction", "threshold", work, background=True)
    except PiError as exc:  # the global limit: try again next turn
        opened.turn_compacted = False
        log.info("auto-compaction of %s not started: %s", opened.key, exc.message)


async def automatic(core: Core, opened: OpenSession, reason: Reason, report: Report) -> CompactResult:
    """An automatic compaction framed by ``pi/compactionStarted`` / ``pi/compactionEnded``."""
    will_retry = reason == "overflow"
    core.notify(methods.COMPACTION_STARTED, CompactionStarted(session_id=opened.key, reason=reason,
                                                              will_retry=will_retry))
    ended = CompactionEnded(session_id=opened.key, reason=reason, will_retry=will_retry)
    try:
        outcome = await masked_or_compacted(core, opened, reason, report)
    except BaseException as exc:
        prefix = "Context overflow recovery failed" if will_retry else "Auto-compaction failed"
        detail = "cancelled" if isinstance(exc, asyncio.CancelledError) else _message(exc)
        core.notify(methods.COMPACTION_ENDED, attrs.evolve(ended, will_retry=False, error=f"{prefix}: {detail}"))
        raise
    core.notify(methods.COMPACTION_ENDED, attrs.evolve(ended, entry=outcome.entry, result=outcome))
    return outcome


async def masked_or_compacted(core: Core, opened: OpenSession, reason: Reason, report: Report) -> CompactResult:
    """The masking tier first (``compaction.masking``), then a summary unless masking was enough.

    The ``liveWriter`` guard runs before the masking edits too (they would be orphaned beside a live writer).
    """
    try:
        check_live_writer(core, opened, force=False, action="compact")
        masked = masking.mask_first(core, opened)
    except PiError as exc:
        core.notify(methods.COMPACTION_FAILED, failure(opened.key, reason, exc))
        raise
    if masked is not None and masked.enough:
        report(f"Masked {len(masked.edits)} old tool results; no summary needed", 100)
        return CompactResult(entry=masked.edits[-1], tokens_before=masked.tokens_before,
                             tokens_after=masked.tokens_after, estimated_tokens_after=masked.tokens_after,
                             outcome="maskedOnly", masked=masked.edits)
    result = await compact_session(core, opened, reason=reason, will_retry=reason == "overflow", instructions=None,
                                   report=report)
    if masked is None:
        return result
    return attrs.evolve(result, tokens_before=masked.tokens_before, masked=masked.edits)


# ---------------------------------------------------------------- the flow
async def compact_session(
    core: Core, opened: OpenSession, *, reason: Reason, will_retry: bool, instructions: str | None, report: Report,
    force: bool = False,
) -> CompactResult:
    """The ``liveWriter`` guard, ``pipeline.compaction.compact`` with the hooks, then the notifications
    (``pi/compactionFailed`` when it wrote nothing)."""
    try:
        check_live_writer(core, opened, force=force, action="compact")
        return await _compact_session(core, opened, reason=reason, will_retry=will_retry,
                                      instructions=instructions, report=report)
    except (Exception, asyncio.CancelledError) as exc:
        core.notify(methods.COMPACTION_FAILED, failure(opened.key, reason, exc))
        raise


def failure(session_id: str, reason: Reason, exc: BaseException, *, message: str | None = None) -> CompactionFailed:
    """The ``pi/compactionFailed`` of an attempt that ended with ``exc`` (Pi 1.6.0's wording)."""
    aborted = isinstance(exc, asyncio.CancelledError | Rejected)
    error_reason = "cancelled" if aborted else exc.reason if isinstance(exc, PiError) else "internal"
    text = message if message is not None else f"{FAILURE_PREFIX[reason]}: {_message(exc)}"
    return CompactionFailed(session_id=session_id, reason=reason, error_message=None if aborted else text,
                            aborted=aborted, will_retry=False, error_reason=error_reason)


async def _compact_session(
    core: Core, opened: OpenSession, *, reason: Reason, will_retry: bool, instructions: str | None, report: Report
) -> CompactResult:
    if instructions is None:
        from pi_sessiond.service import preparing  # builds on this module

        reused = await preparing.reuse(core, opened, reason, report)
        if reused is not None:
            return reused
    session = opened.session
    settings = core.settings_for(opened)

    async def supply(prep: CompactionPreparation) -> JsonDict | None:
        return await hooks.before_compact(core, opened, settings, prep, reason, will_retry, instructions)

    apply_durability(session, settings)
    session.check_writable()  # locked / writeFailed now, before a (paid) summary is asked for
    summarizer = core.summarizer(settings)
    try:
        result = await compact(
            session,
            summarizer,
            settings=core.compaction_settings(opened, settings),
            custom_instructions=instructions,
            progress=report,
            supply=supply,
            review=hooks.reviewer(core, opened, settings, "compaction"),
            options=core.run_options(settings, report),
        )
    finally:
        await summarizer.aclose()
    entry = result.entry
    core.notify(methods.COMPACTED, Compacted(session_id=opened.key, entry=entry.data, reason=reason))
    core.notify(methods.SESSION_CHANGED, SessionChanged(session_id=opened.key, leaf_id=session.leaf_id,
                                                        reason="compaction"))
    gate = gate_of(result.gate)
    return CompactResult(entry=entry.data, tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                         estimated_tokens_after=result.tokens_after, usage=result.usage, outcome="compacted",
                         gate=gate)


def gate_of(added: Iterable[Added]) -> Gate:
    """The wire form of what the fidelity gate added."""
    return Gate(added=[GateAddition(kind=a.kind, text=a.text) for a in added])


# ---------------------------------------------------------------- progress
async def with_progress(
    factory: ProgressFactory, title: str, token: int | str | None, work: Callable[[Report], Awaitable[T]]
) -> T:
    """Run ``work`` with a progress bar; ``end`` is sent in ``finally``."""
    bar = await factory.begin(title, token)
    outcome = "failed"
    try:
        result = await work(bar.report)
        outcome = "done"
        return result
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        bar.end(outcome)


def _message(exc: BaseException) -> str:
    return exc.message if isinstance(exc, PiError) else str(exc) or type(exc).__name__


def _ignore(message: str, percentage: int | None) -> None:
    return None

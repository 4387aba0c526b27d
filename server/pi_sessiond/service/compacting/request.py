"""Compaction requests: ``pi/compact``, ``pi/reportOverflow`` and auto-compaction.

The pipeline is ``pipeline.compaction.compact``; this module plugs the
client's hooks (``service.hooks``) into it (``pi/beforeCompact`` as its
``supply``: cancel / a supplied compaction / go on; ``pi/reviewSummary`` as
its ``review``: accept / edit / reject), runs it as a job with a progress bar
and sends the notifications. The pipeline's leaf re-check decides what
appends during a summary may do (see its docstring). Before anything runs,
the ``liveWriter`` guard (``service.sessions.livewriter``) refuses a compaction of a
session another program appended to lately, unless ``force``.
The file's writability is checked before the summarizer is asked (a
``locked`` or ``writeFailed`` answer costs no model call).
A draft kept for the session (``compaction.prepareAt``, ``pi/compact {draft:
true}``) is written instead of a new summary where it does the same job
(``service.compacting.prepared.reuse``).
Anything that stops before the append leaves the session untouched, and every
attempt that wrote nothing (manual, threshold or overflow: a failure, a
refusal, a cancellation) is announced by one ``pi/compactionFailed``, as Pi
1.6.0's ``session_compact_failed``; a request refused before it ran (``busy``)
is not an attempt.
"""

from __future__ import annotations

import asyncio
import logging

import attrs

from pi_protocol import CompactionPreview, CompactResult, methods
from pi_protocol.base import JsonDict
from pi_protocol.params import CompactParams, ReportOverflowParams
from pi_protocol.results import Compacted, CompactionEnded, CompactionStarted, Reason, SessionChanged
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.errors import NothingToCompact, PiError
from pi_sessiond.pipeline.compaction import compact, refusal, session_reasoning
from pi_sessiond.pipeline.compaction import preview as preview_of
from pi_sessiond.service import hooks, masking
from pi_sessiond.service.compacting import prepared
from pi_sessiond.service.compacting.drafts import Drafts, context_size
from pi_sessiond.service.interface import HookClient, Notify, ProgressFactory
from pi_sessiond.service.jobs import Job, JobManager
from pi_sessiond.service.models import context_window
from pi_sessiond.service.progress import Report, describe, failure, gate_of, ignore, with_progress
from pi_sessiond.service.sessions.livewriter import check_live_writer
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.service.summarizing import Summarizers, run_options
from pi_sessiond.summarizers.base import SummaryRequest

log = logging.getLogger(__name__)
OVERFLOW_RETRIED = (
    "Context overflow recovery failed after one compact-and-retry attempt. "
    "Try reducing context or switching to a larger-context model."
)


@attrs.frozen
class Compactions:
    """Runs compactions: manual, overflow and threshold (the seams they need)."""

    notify: Notify
    jobs: JobManager
    hooks: HookClient
    summarizers: Summarizers
    drafts: Drafts
    background_progress: ProgressFactory | None = None

    # -------------------------------------------------------------- requests
    async def manual(self, scope: Scope, params: CompactParams, progress: ProgressFactory) -> CompactResult:
        """``pi/compact``: a job of this session, with a progress bar."""

        async def work() -> CompactResult:
            return await with_progress(
                progress, "Compacting session", params.work_done_token,
                lambda report: self.compact_session(scope, reason="manual", will_retry=False,
                                                    instructions=params.custom_instructions, report=report,
                                                    force=params.force),
            )

        return await self.jobs.run(scope.key, "compaction", "manual", work)

    async def overflow(self, scope: Scope, params: ReportOverflowParams, progress: ProgressFactory) -> CompactResult:
        """``pi/reportOverflow``: compact with reason ``overflow`` and ``willRetry: true``."""
        opened = scope.opened
        if not scope.settings.compaction.enabled:
            raise NothingToCompact("auto-compaction is disabled (compaction.enabled is false)")
        self.jobs.check(scope.key)
        if opened.overflow_attempted:  # refused before it started: no started/ended pair, one compactionFailed
            refused = NothingToCompact(OVERFLOW_RETRIED)
            self.notify(methods.COMPACTION_FAILED, failure(scope.key, "overflow", refused, message=OVERFLOW_RETRIED))
            raise refused
        opened.overflow_attempted = True

        async def work() -> CompactResult:
            return await with_progress(
                progress, "Compacting session (context overflow)", params.work_done_token,
                lambda report: self.automatic(scope, "overflow", report),
            )

        return await self.jobs.run(scope.key, "compaction", "overflow", work)

    def start_threshold(self, scope: Scope, limit: int = 1, tokens: int | None = None) -> Job | None:
        """Start a background auto-compaction (reason ``threshold``) for a context of ``tokens``: at most
        ``limit`` per turn (``0``: no limit), never beside a job, and after one that failed (a summary that
        would free too little is refused as ``notShrinking``) only once the context grew by a tenth of the
        window (the loop guard, ``service.autocompacting``)."""
        opened = scope.opened
        stalled = opened.auto_stalled is not None and (tokens is None or tokens < opened.auto_stalled)
        if stalled or (limit and opened.auto_count >= limit) or self.jobs.get(scope.key) is not None:
            return None
        opened.turn_compacted = True
        opened.auto_count += 1
        bar = self.background_progress

        async def work() -> None:
            try:
                if bar is None:
                    await self.automatic(scope, "threshold", ignore)
                else:
                    await with_progress(bar, "Compacting session (auto)", None,
                                        lambda report: self.automatic(scope, "threshold", report))
            except asyncio.CancelledError:
                _stall(scope)  # cancelled by the client: not restarted at once
                raise
            except PiError as exc:
                _stall(scope)  # another would fail the same way until the context grew
                log.info("auto-compaction of %s did not complete: %s", scope.key, exc.message)

        try:
            return self.jobs.start(scope.key, "compaction", "threshold", work, background=True)
        except PiError as exc:  # the global limit: try again at the next append
            opened.turn_compacted = False
            opened.auto_count -= 1
            log.info("auto-compaction of %s not started: %s", scope.key, exc.message)
            return None

    async def automatic(self, scope: Scope, reason: Reason, report: Report) -> CompactResult:
        """An automatic compaction framed by ``pi/compactionStarted`` / ``pi/compactionEnded``."""
        will_retry = reason == "overflow"
        self.notify(methods.COMPACTION_STARTED, CompactionStarted(session_id=scope.key, reason=reason,
                                                                  will_retry=will_retry))
        ended = CompactionEnded(session_id=scope.key, reason=reason, will_retry=will_retry)
        try:
            outcome = await self.masked_or_compacted(scope, reason, report)
        except BaseException as exc:
            prefix = "Context overflow recovery failed" if will_retry else "Auto-compaction failed"
            detail = "cancelled" if isinstance(exc, asyncio.CancelledError) else describe(exc)
            self.notify(methods.COMPACTION_ENDED, attrs.evolve(ended, will_retry=False, error=f"{prefix}: {detail}"))
            raise
        self.notify(methods.COMPACTION_ENDED, attrs.evolve(ended, entry=outcome.entry, result=outcome))
        return outcome

    async def masked_or_compacted(self, scope: Scope, reason: Reason, report: Report) -> CompactResult:
        """The masking tier first (``compaction.masking``), then a summary unless masking was enough.

        The ``liveWriter`` guard runs before the masking edits too (they would be orphaned beside a live writer).
        """
        try:
            await asyncio.to_thread(check_live_writer, scope, force=False, action="compact")
            masked = masking.mask_first(scope, self.notify)
        except PiError as exc:
            self.notify(methods.COMPACTION_FAILED, failure(scope.key, reason, exc))
            raise
        if masked is not None and masked.enough:
            report(f"Masked {len(masked.edits)} old tool results; no summary needed", 100)
            return CompactResult(entry=masked.edits[-1], tokens_before=masked.tokens_before,
                                 tokens_after=masked.tokens_after, estimated_tokens_after=masked.tokens_after,
                                 outcome="maskedOnly", masked=masked.edits)
        result = await self.compact_session(scope, reason=reason, will_retry=reason == "overflow",
                                            instructions=None, report=report)
        if masked is None:
            return result
        return attrs.evolve(result, tokens_before=masked.tokens_before, masked=masked.edits)

    # -------------------------------------------------------------- the flow
    async def compact_session(
        self, scope: Scope, *, reason: Reason, will_retry: bool, instructions: str | None, report: Report,
        force: bool = False,
    ) -> CompactResult:
        """The ``liveWriter`` guard, ``pipeline.compaction.compact`` with the hooks, then the notifications
        (``pi/compactionFailed`` when it wrote nothing)."""
        try:
            await asyncio.to_thread(check_live_writer, scope, force=force, action="compact")  # file reads: off the loop
            return await self._compact_session(scope, reason=reason, will_retry=will_retry,
                                               instructions=instructions, report=report)
        except (Exception, asyncio.CancelledError) as exc:
            self.notify(methods.COMPACTION_FAILED, failure(scope.key, reason, exc))
            raise

    async def _compact_session(
        self, scope: Scope, *, reason: Reason, will_retry: bool, instructions: str | None, report: Report
    ) -> CompactResult:
        ready = None
        if instructions is None:
            reused = await prepared.reuse(self.drafts, self.hooks, scope, reason, report)
            if isinstance(reused, CompactResult):
                return reused
            ready = reused  # the preparation made while looking for a kept draft, or None
        settings = scope.settings
        options = self.summarizers.replaying(run_options(settings, report), settings, scope.key, report)

        async def supply(prep: CompactionPreparation) -> JsonDict | None:
            return await hooks.before_compact(self.hooks, scope, prep, reason, will_retry, instructions,
                                              options.limit)

        session = scope.durable()
        await asyncio.to_thread(session.check_writable)  # locked / writeFailed now, before a (paid) summary
        summarizer = self.summarizers.open(settings)
        try:
            result = await compact(
                session,
                summarizer,
                settings=scope.compaction,
                custom_instructions=instructions,
                progress=report,
                supply=supply,
                review=hooks.reviewer(self.hooks, scope, "compaction"),
                options=options,
                prepared=ready,
            )
        finally:
            await summarizer.aclose()
        entry = result.entry
        self.notify(methods.COMPACTED, Compacted(session_id=scope.key, entry=entry.data, reason=reason))
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id,
                                                            reason="compaction"))
        return CompactResult(entry=entry.data, tokens_before=result.tokens_before, tokens_after=result.tokens_after,
                             estimated_tokens_after=result.tokens_after, usage=result.usage, outcome="compacted",
                             gate=gate_of(result.gate), request_plan=result.plan,
                             request_shape=result.plan.shape if result.plan else "serialized")


def preview(scope: Scope, instructions: str | None, summarizers: Summarizers | None = None) -> CompactionPreview:
    """``compact --dry-run``: the preparation of the leaf as ``pi/beforeCompact`` shows it (without settings).

    It exists exactly where Pi 1.6.0 returns a preparation; :class:`NothingToCompact`
    (with Pi's reason) where Pi returns none, which includes nothing to summarize.
    With ``summarizers`` and a cache-aware summarizer, the history request's plan
    (``requestShape``, ``requestPlan``) is shown too.
    """
    session = scope.session
    path = session.path_to()
    prep = prepare_compaction(path, scope.compaction, session.projection())
    if prep is None:
        raise NothingToCompact(refusal(path))
    options = run_options(scope.settings)
    shown = preview_of(prep, instructions, session_reasoning(session), options.limit)
    options = summarizers.replaying(options, scope.settings, scope.key, None) if summarizers else options
    history = next((r for r in shown.requests if r.purpose == "history"), None)
    if options.replay is None or history is None:
        return shown
    plan = options.replay.plan(SummaryRequest(system_prompt=history.system_prompt, prompt=history.prompt,
                                              max_tokens=history.max_tokens))
    return attrs.evolve(shown, request_shape=plan.shape, request_plan=plan)


STALL_GROWTH = 0.1
"""After a failed automatic compaction, the share of the window the context must grow by before the next."""


def _stall(scope: Scope) -> None:
    window = context_window(scope.settings, scope.session.context().model)
    scope.opened.auto_stalled = context_size(scope) + int(STALL_GROWTH * window)

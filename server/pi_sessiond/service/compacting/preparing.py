"""``compaction.prepareAt``: a compaction drafted in the background before the threshold.

Contracts:

- :func:`after_growth` runs after an append (``pi/append``, and a live Pi's
  lines folded in by the live watch). When ``compaction.prepareAt`` is set
  and the context passed ``prepareAt × (window − reserveTokens)`` (but not the
  threshold), one background draft per session is made at low priority: a job
  that yields its slot to any other (``service.jobs``), with its own progress
  bar, cancellable with it or by closing the session. Nothing starts while any
  job of the session runs, or while a kept draft of the leaf is still enough
  (``service.compacting.prepared``).
- When the threshold is crossed while the background draft runs, that job goes
  on to compact as soon as the draft is ready (:meth:`Preparing.after_append`).
"""

from __future__ import annotations

import asyncio
import logging

import attrs

from pi_protocol.results import AppendCompaction
from pi_sessiond.errors import PiError
from pi_sessiond.service.compacting import prepared
from pi_sessiond.service.compacting.drafts import Drafts, context_size
from pi_sessiond.service.compacting.draftstore import StoredDraft
from pi_sessiond.service.compacting.request import Compactions
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.models import context_window
from pi_sessiond.service.progress import Report, ignore, with_progress
from pi_sessiond.service.sessions.scope import Scope

PREPARE = "prepare"
"""The reason of the background draft's job."""
log = logging.getLogger(__name__)


@attrs.frozen
class Preparing:
    """What an append (or a live Pi's growth) sets off: a threshold compaction or a background draft."""

    jobs: JobManager
    drafts: Drafts
    compactions: Compactions
    background_progress: ProgressFactory | None = None

    def after_append(self, scope: Scope, due: bool, tokens: int, limit: int = 1) -> AppendCompaction | None:
        """``due``: the threshold was reached (compact now, at most ``limit`` per turn, or when the running
        background draft is ready); else maybe start a background draft for the context of ``tokens``.
        What the append result's ``compaction`` says (``None`` when not ``due``)."""
        if not due:
            self.after_growth(scope, tokens)
            return None
        if self._threshold_crossed(scope):  # the background draft compacts once it is ready
            draft = self.jobs.get(scope.key)
            return AppendCompaction(started=scope.opened.threshold_waiting, job_id=draft.id if draft else None)
        job = self.compactions.start_threshold(scope, limit, tokens)
        if job is not None:
            return AppendCompaction(started=True, job_id=job.id)
        running = self.jobs.get(scope.key)
        return AppendCompaction(started=False, job_id=running.id if running is not None else None)

    def after_growth(self, scope: Scope, tokens: int | None = None) -> None:
        """Start the session's background draft when the context (``tokens``, measured when ``None``) passed
        ``prepareAt`` (see above)."""
        settings = scope.settings
        at = settings.compaction.prepare_at
        if at is None or not settings.compaction.enabled or self.jobs.get(scope.key) is not None:
            return
        tokens = context_size(scope) if tokens is None else tokens
        compaction = scope.compaction
        threshold = context_window(settings, scope.session.context().model) - compaction.reserve_tokens
        if not at * threshold < tokens <= threshold:
            return
        kept = prepared.holding(scope, self.drafts.store.drafts(scope.key))
        if kept is not None and prepared.enough(kept, tokens, threshold - compaction.keep_recent_tokens):
            return
        self._start(scope, kept)

    def _start(self, scope: Scope, base: StoredDraft | None) -> None:
        opened, bar = scope.opened, self.background_progress

        async def work() -> None:
            try:
                if bar is None:
                    await self._prepare(scope, base, ignore)
                else:
                    await with_progress(bar, "Preparing a compaction draft (background)", None,
                                        lambda report: self._prepare(scope, base, report))
            except PiError as exc:
                log.info("the background draft of %s was not made: %s", scope.key, exc.message)
            except asyncio.CancelledError:
                if opened.threshold_waiting:  # it yielded before it could compact: the next turn tries again
                    opened.threshold_waiting = opened.turn_compacted = False
                raise

        try:
            self.jobs.start(scope.key, "compaction", PREPARE, work, background=True, yields=True)
        except PiError as exc:  # no free slot: the next append tries again
            log.info("the background draft of %s was not started: %s", scope.key, exc.message)

    async def _prepare(self, scope: Scope, base: StoredDraft | None, report: Report) -> None:
        """Make (or update) the draft; then compact at once when the threshold was crossed meanwhile."""
        if base is None:
            await self.drafts.leaf_stored(scope, None, report)
        else:
            await prepared.updated(self.drafts, scope, base, report)
        opened = scope.opened
        if opened.threshold_waiting:
            opened.threshold_waiting = False
            job = self.jobs.get(scope.key)
            if job is not None:
                job.yields, job.reason = False, "threshold"  # compacting now: no longer a background draft
            await self.compactions.automatic(scope, "threshold", report)

    def _threshold_crossed(self, scope: Scope) -> bool:
        """The threshold was crossed while the background draft runs: it will compact when ready (``True``)."""
        job = self.jobs.get(scope.key)
        if job is None or not job.yields or job.reason != PREPARE:
            return False
        opened = scope.opened
        if not opened.turn_compacted:  # once per turn, as any auto-compaction
            opened.turn_compacted = opened.threshold_waiting = True
        return True

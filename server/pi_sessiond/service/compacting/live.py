"""``pi/summarize``: a DRAFT summary for a live Pi (or anyone), never written.

Contracts:
- Nothing is written, no entry, no lock taken: the caller (the Pi extension,
  answering Pi's ``session_before_compact`` / ``session_before_tree``) writes
  the entry itself. So a session held by a live Pi may be summarized.
- A compaction draft summarizes ``preparation`` when given (Pi's own, so the
  summary matches the ``firstKeptEntryId`` Pi will write), else the
  preparation of the session's leaf (:class:`NothingToCompact` when there is
  none). A branch draft summarizes ``entriesToSummarize``.
- The summarizer, its settings, retries and output limits are the session's
  (as ``pi/compact`` uses them); the work is a job of the session (``busy``
  beside another one), with a progress bar when a ``workDoneToken`` is given.
- Without ``preparation``, with reason ``threshold`` or ``overflow``, a draft
  prepared in the background (``compaction.prepareAt``) that still holds and is
  enough is the answer, with its own (possibly older) ``firstKeptEntryId``: the
  caller writes the DRAFT's ``firstKeptEntryId``, ``tokensBefore`` and
  ``details``. With ``preparation`` the answer always summarizes exactly that
  range (a kept draft of that very range is reused), so the caller may write the
  preparation's ``firstKeptEntryId``.
- Every DRAFT is kept in the daemon's draft store (``service.compacting.draftstore``) until
  its ``expiresAt``; one of the daemon's own preparation of the leaf can be
  written with ``pi/commitDraft``, the others (Pi's preparation, a branch)
  are written by Pi.
"""

from __future__ import annotations

import attrs

from pi_protocol import unstructure
from pi_protocol.live import Draft, SummarizeParams
from pi_protocol.results import HookPreparation
from pi_sessiond.compaction.fileops import FileOperations
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.errors import InvalidParams
from pi_sessiond.pipeline.compaction import session_reasoning
from pi_sessiond.pipeline.navigation import generate_branch_summary
from pi_sessiond.service.compacting import drafts, prepared
from pi_sessiond.service.compacting.drafts import Drafts
from pi_sessiond.service.compacting.forwarding import Forwarding
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.progress import Report, with_progress
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.service.summarizing import Summarizers, run_options
from pi_sessiond.store.entry import Entry


@attrs.frozen
class LiveSummaries:
    """DRAFT summaries for a live Pi (the seams they need)."""

    jobs: JobManager
    drafts: Drafts
    forwarding: Forwarding
    summarizers: Summarizers

    async def summarize(self, scope: Scope, params: SummarizeParams, progress: ProgressFactory) -> Draft:
        """``pi/summarize``: a job of the session that returns a DRAFT and writes nothing."""
        reuse = self.forwarding.forwarded.get(params.for_request) if params.for_request else None
        if reuse is not None:  # Pi's half of a forwarded pi/compact: its job slot and progress bar
            return await self._draft(scope, params, reuse)
        kind = params.kind
        title = "Summarizing branch" if kind == "branchSummary" else "Compacting session"

        async def work() -> Draft:
            return await with_progress(progress, title, params.work_done_token,
                                       lambda report: self._draft(scope, params, report))

        if kind == "compaction":
            await self.drafts.settle(scope, params.custom_instructions)  # a background draft may be the answer
        return await self.jobs.run(scope.key, kind, f"summarize:{params.reason}", work)

    async def _draft(self, scope: Scope, params: SummarizeParams, report: Report) -> Draft:
        if params.kind == "branchSummary":
            return await self._branch_draft(scope, params, report)
        return await self._compaction_draft(scope, params, report)

    async def _compaction_draft(self, scope: Scope, params: SummarizeParams, report: Report) -> Draft:
        """Pi's preparation summarized (kept, not committable: Pi writes it), else the leaf's (committable);
        at a threshold or overflow the prepared draft when it does the job (``service.compacting.prepared``)."""
        if params.custom_instructions is None and params.preparation is None:
            kept = await prepared.for_threshold(self.drafts, scope, params.reason, report)
            if kept is not None:
                return kept.draft
        if params.preparation is None:
            return await self.drafts.leaf_draft(scope, params.custom_instructions, report)
        prep = from_hook_preparation(params.preparation, scope.compaction)
        if params.custom_instructions is None:
            prep = prepared.narrowed(self.drafts, scope, prep) or prep  # only what a kept draft does not cover
        stored = await self.drafts.summarized(scope, prep, params.custom_instructions, report, leaf_id=None,
                                              committable=False)
        return stored.draft

    async def _branch_draft(self, scope: Scope, params: SummarizeParams, report: Report) -> Draft:
        if params.entries_to_summarize is None:
            raise InvalidParams("entriesToSummarize: required for kind branchSummary")
        settings = scope.settings
        entries = [Entry.from_data(data) for data in params.entries_to_summarize]
        summarizer = self.summarizers.open(settings)
        try:
            made = await generate_branch_summary(
                entries, summarizer, reserve_tokens=settings.branch_summary.reserve_tokens,
                custom_instructions=params.custom_instructions, replace_instructions=params.replace_instructions,
                progress=report, reasoning=session_reasoning(scope.session), options=run_options(settings, report),
            )
        finally:
            await summarizer.aclose()
        tokens = estimate_tokens({"role": "branchSummary", "summary": made.summary, "fromId": ""})
        draft = Draft(
            draft_id=drafts.new_draft_id(), session_id=scope.key, kind="branchSummary", summary=made.summary,
            estimated_tokens_after=tokens, details=unstructure(made.stored_details()), usage=made.usage,
        )
        self.drafts.store.add(draft)  # kept so that pi/commitDraft can say what writes it
        return draft


def from_hook_preparation(given: HookPreparation, settings: CompactionSettings) -> CompactionPreparation:
    """A :class:`CompactionPreparation` from the wire shape (``pi/beforeCompact``'s), for summarizing only.

    Only what the summary requests read is filled in; the projection indices are
    unknown (``0``), so the result must never be used to write an entry.
    """
    return CompactionPreparation(
        first_kept_entry_id=given.first_kept_entry_id, first_kept_entry_index=0, boundary_start=0,
        turn_start_index=0, is_split_turn=given.is_split_turn,
        messages_to_summarize=tuple(given.messages_to_summarize),
        turn_prefix_messages=tuple(given.turn_prefix_messages), tokens_before=given.tokens_before,
        previous_summary=given.previous_summary,
        file_ops=FileOperations(read=frozenset(given.read_files), edited=frozenset(given.modified_files)),
        settings=settings,
    )

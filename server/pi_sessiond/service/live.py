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
"""

from __future__ import annotations

import uuid
from pathlib import Path

from pi_protocol import unstructure
from pi_protocol.live import Draft, SummarizeParams
from pi_protocol.results import HookPreparation
from pi_sessiond.compaction.fileops import FileOperations
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.errors import InvalidParams, NothingToCompact
from pi_sessiond.pipeline.compaction import (
    compaction_entry,
    pending_tokens,
    prepare_off_loop,
    session_reasoning,
    summarize_prepared,
)
from pi_sessiond.pipeline.navigation import generate_branch_summary
from pi_sessiond.service.compaction import Report, gate_of, with_progress
from pi_sessiond.service.core import Core
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.registry import OpenSession
from pi_sessiond.store.entry import Entry


def opened_for(core: Core, params: SummarizeParams) -> OpenSession:
    """The session ``params`` names: an open ``sessionId``, else ``path`` (opened if needed, read-only)."""
    if params.session_id is not None:
        return core.registry.get(params.session_id)
    if params.path is not None:
        return core.registry.open_path(Path(params.path).expanduser())
    raise InvalidParams("path or sessionId: one of them is required")


async def summarize(core: Core, params: SummarizeParams, progress: ProgressFactory) -> Draft:
    """``pi/summarize``: a job of the session that returns a DRAFT and writes nothing."""
    opened = opened_for(core, params)
    reuse = core.forwarded.get(params.for_request) if params.for_request else None
    if reuse is not None:  # Pi's half of a forwarded pi/compact: its job slot and progress bar
        return await _draft(core, opened, params, reuse)
    kind = params.kind
    title = "Summarizing branch" if kind == "branchSummary" else "Compacting session"

    async def work() -> Draft:
        return await with_progress(progress, title, params.work_done_token,
                                   lambda report: _draft(core, opened, params, report))

    return await core.jobs.run(opened.key, kind, f"summarize:{params.reason}", work)


async def _draft(core: Core, opened: OpenSession, params: SummarizeParams, report: Report) -> Draft:
    if params.kind == "branchSummary":
        return await _branch_draft(core, opened, params, report)
    return await _compaction_draft(core, opened, params, report)


async def _compaction_draft(core: Core, opened: OpenSession, params: SummarizeParams, report: Report) -> Draft:
    session = opened.session
    settings = core.settings_for(opened)
    compaction = core.compaction_settings(opened, settings)
    if params.preparation is not None:
        prep = from_hook_preparation(params.preparation, compaction)
    else:
        prep = await prepare_off_loop(session, compaction)
    if prep.nothing_to_compact:
        raise NothingToCompact("Nothing to compact (session too small)")
    summarizer = core.summarizer(settings)
    try:
        text = await summarize_prepared(session, summarizer, prep, params.custom_instructions, report,
                                        core.run_options(settings, report))
    finally:
        await summarizer.aclose()
    data = compaction_entry(prep, text.text, text.usage)
    return Draft(
        draft_id=new_draft_id(), session_id=opened.key, kind="compaction", summary=text.text,
        first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before,
        estimated_tokens_after=_tokens_after(opened, data, prep.first_kept_entry_id),
        details=data.get("details"), usage=text.usage, gate=gate_of(text.gate),
    )


async def _branch_draft(core: Core, opened: OpenSession, params: SummarizeParams, report: Report) -> Draft:
    if params.entries_to_summarize is None:
        raise InvalidParams("entriesToSummarize: required for kind branchSummary")
    settings = core.settings_for(opened)
    entries = [Entry.from_data(data) for data in params.entries_to_summarize]
    summarizer = core.summarizer(settings)
    try:
        made = await generate_branch_summary(
            entries, summarizer, reserve_tokens=settings.branch_summary.reserve_tokens,
            custom_instructions=params.custom_instructions, replace_instructions=params.replace_instructions,
            progress=report, reasoning=session_reasoning(opened.session), options=core.run_options(settings, report),
        )
    finally:
        await summarizer.aclose()
    tokens = estimate_tokens({"role": "branchSummary", "summary": made.summary, "fromId": ""})
    return Draft(
        draft_id=new_draft_id(), session_id=opened.key, kind="branchSummary", summary=made.summary,
        estimated_tokens_after=tokens, details=unstructure(made.stored_details()), usage=made.usage,
    )


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


def _tokens_after(opened: OpenSession, data: dict[str, object], first_kept: str) -> int:
    """``estimatedTokensAfter`` if the draft were written at the daemon's leaf; the summary alone when the
    daemon's view of the file does not hold ``first_kept`` (a live Pi wrote it since)."""
    session = opened.session
    if first_kept in {e.id for e in session.path_to()}:
        return pending_tokens(session, data)
    return estimate_tokens({"role": "compactionSummary", "summary": data.get("summary", ""), "tokensBefore": 0})


def new_draft_id() -> str:
    """A fresh draft id."""
    return uuid.uuid4().hex

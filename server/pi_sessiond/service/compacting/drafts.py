"""Compaction drafts: ``pi/compact {draft: true}`` makes one, ``pi/commitDraft`` writes it.

Contracts:
- Making a draft writes nothing and takes no lock (so a session a live Pi holds
  may be drafted): a job of the session (``busy`` beside another one) with a
  progress bar, the leaf prepared as ``pi/compact`` prepares it, summarized
  with the session's summarizer and settings, the fidelity gate run and the
  size checked (``notShrinking``) before the DRAFT is returned. No hook runs:
  the person looking at the draft is its review. A draft that fails wrote
  nothing and is only the request's error (no ``pi/compactionFailed``).
- Drafts are kept by :class:`~pi_sessiond.service.compacting.draftstore.DraftStore`
  (``Drafts.store``) until ``expiresAt``.
- ``pi/commitDraft`` writes the draft's compaction entry as ``pi/compact``
  would have (one line; ``pipeline.compaction.write_compaction``) under the
  leaf rules of a compaction commit at that moment: after other writers' lines
  are folded in, the entry goes on the newest leaf when that is the leaf the
  draft was prepared at or continues it without another compaction (the
  entries appended since stay in the kept part), else :class:`Conflict` and
  nothing is written. An edited ``summary`` is written as given (the gate is
  not re-run on a person's edit) but, like a reviewer's edit, must still
  shrink the context. The ``liveWriter`` guard applies as to a compaction;
  a session held by a live Pi is refused (Pi writes its own compactions).
  A failed commit is announced by ``pi/compactionFailed`` (reason ``manual``).
- Only a compaction draft the daemon prepared can be committed here: a
  branch-summary draft, or one of a preparation Pi gave (``pi/summarize``), is
  ``invalidParams`` naming what writes it.
"""

from __future__ import annotations

import asyncio
import uuid

import attrs

from pi_protocol import CompactResult, Gate, methods
from pi_protocol.live import Draft
from pi_protocol.params import CommitDraftParams, CompactParams
from pi_protocol.results import Compacted, Reason, SessionChanged
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.errors import InvalidParams, NothingToCompact, PiError
from pi_sessiond.pipeline.compaction import (
    check_descends,
    check_shrinks,
    compaction_entry,
    estimated_tokens_after,
    pending_tokens,
    prepare_off_loop,
    summarize_prepared,
    write_compaction,
)
from pi_sessiond.service.compacting.draftstore import DraftStore, StoredDraft
from pi_sessiond.service.interface import Notify, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.progress import Report, failure, gate_of, with_progress
from pi_sessiond.service.sessions import livewriter
from pi_sessiond.service.sessions.livewriter import check_live_writer
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.service.stats import leaf_context_tokens
from pi_sessiond.service.summarizing import Summarizers, run_options
from pi_sessiond.store.entry import Entry

BRANCH_HINT = ("a branch-summary draft is written by whoever navigates: answer Pi's session_before_tree with it "
               "(the Pi extension does), or have the daemon summarize with pi/navigateTree {summarize: true}")
FOREIGN_HINT = ("this draft summarizes a preparation Pi gave (pi/summarize {preparation}): Pi writes it, from its "
                "session_before_compact; for a draft the daemon writes use pi/compact {draft: true}")



@attrs.frozen
class Drafts:
    """Makes, keeps and writes compaction drafts (the seams they need)."""

    notify: Notify
    jobs: JobManager
    summarizers: Summarizers
    store: DraftStore = attrs.field(factory=DraftStore)

    # -------------------------------------------------------------- making
    async def compact_draft(self, scope: Scope, params: CompactParams, progress: ProgressFactory) -> Draft:
        """``pi/compact {draft: true}``: a job of the session that returns a DRAFT and writes nothing."""

        async def work() -> Draft:
            return await with_progress(progress, "Preparing a compaction draft", params.work_done_token,
                                       lambda report: self.leaf_draft(scope, params.custom_instructions, report))

        await self.settle(scope, params.custom_instructions)
        return await self.jobs.run(scope.key, "compaction", "draft", work)

    async def settle(self, scope: Scope, instructions: str | None) -> None:
        """Let a background draft of the session in flight finish first, when the request could reuse it
        (no ``instructions``); otherwise the request's job takes its slot (``JobManager``)."""
        job = self.jobs.get(scope.key)
        if job is not None and job.yields and instructions is None:
            await asyncio.wait({job.task})  # not cancelled with the waiting request

    async def leaf_draft(self, scope: Scope, instructions: str | None, report: Report) -> Draft:
        """A stored, committable draft of the session's leaf (:class:`NothingToCompact` when there is none)."""
        return (await self.leaf_stored(scope, instructions, report)).draft

    async def leaf_stored(self, scope: Scope, instructions: str | None, report: Report) -> StoredDraft:
        """:meth:`leaf_draft` as stored (a kept draft of the same range, made without instructions, is reused)."""
        session = scope.session
        leaf_id = session.leaf_id  # the path the preparation reads is taken now, before the first await
        prep = await prepare_off_loop(session, scope.compaction)
        return await self.summarized(scope, prep, instructions, report, leaf_id=leaf_id)

    async def summarized(self, scope: Scope, prep: CompactionPreparation, instructions: str | None,
                         report: Report, *, leaf_id: str | None, committable: bool = True) -> StoredDraft:
        """Summarize ``prep`` (gate run, size checked) into a stored DRAFT; committable when prepared at ``leaf_id``.

        Without ``instructions``, a kept draft of the same range (``DraftStore.same_range``) is the answer and
        no summarizer is asked.
        """
        if prep.nothing_to_compact:
            raise NothingToCompact("Nothing to compact (session too small)")
        kept = self.store.same_range(scope.key, prep.first_kept_entry_id) if instructions is None else None
        if kept is not None:
            report("reusing the draft prepared for this range", 100)
            return kept
        session = scope.session
        tokens_at = context_size(scope)
        summarizer = self.summarizers.open(scope.settings)
        try:
            options = self.summarizers.replaying(run_options(scope.settings, report), scope.settings, scope.key,
                                                 report)
            text = await summarize_prepared(session, summarizer, prep, instructions, report, options)
        finally:
            await summarizer.aclose()
        data = compaction_entry(prep, text.text, text.usage)
        draft = Draft(
            draft_id=new_draft_id(), session_id=scope.key, kind="compaction", summary=text.text,
            first_kept_entry_id=prep.first_kept_entry_id, tokens_before=prep.tokens_before,
            estimated_tokens_after=tokens_after(scope, data, prep.first_kept_entry_id),
            details=data.get("details"), usage=text.usage, gate=gate_of(text.gate),
        )
        if not committable:
            return self.store.add(draft, tokens_at=tokens_at, instructions=instructions)
        return self.store.add(draft, entry=data, prep=prep, leaf_id=leaf_id, tokens_at=tokens_at,
                              instructions=instructions)

    # ---------------------------------------------------------- committing
    async def commit(self, scope: Scope, params: CommitDraftParams) -> CompactResult:
        """``pi/commitDraft`` (see the module docstring)."""
        stored = self.store.get(scope.key, params.draft_id)
        if stored.draft.kind == "branchSummary":
            raise InvalidParams(f"draftId: {BRANCH_HINT}", data={"draftId": params.draft_id, "kind": "branchSummary"})
        if stored.entry is None or stored.prep is None:
            raise InvalidParams(f"draftId: {FOREIGN_HINT}", data={"draftId": params.draft_id, "kind": "compaction"})
        self.jobs.check(scope.key)
        held = livewriter.live_pi(scope.session.path)
        if held is not None:
            raise livewriter.refuse(held, "commit a draft", "/compact")
        try:
            await asyncio.to_thread(check_live_writer, scope, force=params.force, action="commit a draft")
            entry = write(scope, stored, params.summary)
        except PiError as exc:
            self.notify(methods.COMPACTION_FAILED, failure(scope.key, "manual", exc))
            raise
        return self.written(scope, stored, entry, "manual")

    def written(self, scope: Scope, stored: StoredDraft, entry: Entry, reason: Reason) -> CompactResult:
        """After the draft ``stored`` was written as ``entry``: mark it, notify, and the ``pi/compact`` result."""
        stored.committed = True
        self.notify(methods.COMPACTED, Compacted(session_id=scope.key, entry=entry.data, reason=reason))
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=scope.session.leaf_id,
                                                            reason="compaction"))
        after = estimated_tokens_after(scope.session)
        summary = str(entry.data.get("summary", ""))
        gate = Gate(added=[a for a in stored.draft.gate.added if a.text in summary])  # what is still in the text
        return CompactResult(entry=entry.data, tokens_before=int(entry.data.get("tokensBefore") or 0),
                             tokens_after=after, estimated_tokens_after=after, usage=stored.draft.usage,
                             outcome="compacted", gate=gate)


def context_size(scope: Scope) -> int:
    """The leaf's context size as ``pi/append`` reports it (``contextTokens``)."""
    session = scope.session
    return leaf_context_tokens(session, session.context().messages, scope.settings.tokenizer)


def tokens_after(scope: Scope, data: dict[str, object], first_kept: str) -> int:
    """``estimatedTokensAfter`` if the draft were written at the daemon's leaf; the summary alone when the
    daemon's view of the file does not hold ``first_kept`` (a live Pi wrote it since)."""
    session = scope.session
    if first_kept in {e.id for e in session.path_to()}:
        return pending_tokens(session, data)
    return estimate_tokens({"role": "compactionSummary", "summary": data.get("summary", ""), "tokensBefore": 0})


def new_draft_id() -> str:
    """A fresh draft id."""
    return uuid.uuid4().hex


def write(scope: Scope, stored: StoredDraft, summary: str | None = None) -> Entry:
    """Append the draft's entry (``summary`` instead of its own) under the leaf rules of a compaction commit."""
    assert stored.entry is not None and stored.prep is not None
    session = scope.durable()
    session.check_writable()
    check_descends(session, stored.leaf_id)  # refused before anything else when the range no longer holds
    data = dict(stored.entry)
    if summary is not None and summary != stored.draft.summary:
        data["summary"] = summary
        check_shrinks(session, stored.prep, data)
    return write_compaction(session, data, verify=lambda: check_descends(session, stored.leaf_id))

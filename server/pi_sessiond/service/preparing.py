"""``compaction.prepareAt``: a compaction drafted in the background before the threshold, used when it is reached.

Contracts:
- :func:`after_growth` runs after an append (``pi/append``, and a live Pi's
  lines folded in by ``service.watch``). When ``compaction.prepareAt`` is set
  and the context passed ``prepareAt × (window − reserveTokens)`` (but not the
  threshold), one background draft per session is made at low priority: a job
  that yields its slot to any other (``service.jobs``), with its own progress
  bar, cancellable with it or by closing the session. Nothing starts while any
  job of the session runs, or while a kept draft of the leaf is still enough.
- A draft is *enough* while committing it would leave at most
  ``threshold − keepRecentTokens`` (the masking tier's bar), estimated as its
  ``estimatedTokensAfter`` plus what the context grew since it was made. A draft
  that still holds (its leaf, or a continuation of it without another
  compaction, is the leaf) but is no longer enough is *updated from where it
  was*: only the range after its ``firstKeptEntryId`` is summarized, with the
  draft as the previous summary (:func:`updated`), never from the start.
- At the threshold or an overflow, :func:`reuse` commits a kept draft that holds
  and is enough at once (no model call; entries appended since it was made stay
  in the kept part), writes the update of one that holds but is not, and
  answers ``None`` otherwise (the caller compacts as usual). A ``pi/compact``
  without instructions writes a kept draft of exactly the range it would
  compact. When the threshold is crossed while the background draft runs, that
  job goes on to compact as soon as the draft is ready.
- ``pi/summarize`` without a preparation, with reason ``threshold`` or
  ``overflow`` (a live Pi's ``session_before_compact``), answers by the same
  rule (:func:`for_threshold`): the kept draft, or its update, whose own
  ``firstKeptEntryId`` is then the one to write. With Pi's preparation, exactly
  its range is summarized: a kept draft of that very range is the answer, and
  one that covers its first part exactly is its previous summary, so only the
  rest is summarized (:func:`narrowed`).
- Nothing is reused when the client declared the ``beforeCompact`` or
  ``reviewSummary`` hook: their answers belong to every compaction.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import attrs

from pi_protocol import CompactResult
from pi_protocol.results import Reason
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.tokens import estimate_projected_context_tokens
from pi_sessiond.errors import Conflict, PiError
from pi_sessiond.pipeline.compaction import check_descends, prepare_off_loop
from pi_sessiond.service import drafts
from pi_sessiond.service.compaction import Report, automatic, with_progress
from pi_sessiond.service.core import Core
from pi_sessiond.service.draftstore import StoredDraft
from pi_sessiond.service.models import context_window
from pi_sessiond.service.registry import OpenSession
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.layout import now_iso
from pi_sessiond.store.projection import Projection

PREPARE = "prepare"
"""The reason of the background draft's job."""
VIRTUAL_ID = "pi-sessiond-draft"
log = logging.getLogger("pi_sessiond.service.preparing")


# ------------------------------------------------------------ in the background
def after_growth(core: Core, opened: OpenSession, tokens: int) -> None:
    """Start the session's background draft when the context of ``tokens`` passed ``prepareAt`` (see above)."""
    settings = core.settings_for(opened)
    at = settings.compaction.prepare_at
    if at is None or not settings.compaction.enabled or core.jobs.get(opened.key) is not None:
        return
    compaction = core.compaction_settings(opened, settings)
    threshold = context_window(settings, opened.session.context().model) - compaction.reserve_tokens
    if not at * threshold < tokens <= threshold:
        return
    kept = _holding(opened, core.drafts.drafts(opened.key))
    if kept is not None and _enough(kept, tokens, threshold - compaction.keep_recent_tokens):
        return
    _start(core, opened, kept)


def _start(core: Core, opened: OpenSession, base: StoredDraft | None) -> None:
    async def work() -> None:
        try:
            if core.background_progress is None:
                await _prepare(core, opened, base, _ignore)
            else:
                await with_progress(core.background_progress, "Preparing a compaction draft (background)", None,
                                    lambda report: _prepare(core, opened, base, report))
        except PiError as exc:
            log.info("the background draft of %s was not made: %s", opened.key, exc.message)
        except asyncio.CancelledError:
            if opened.threshold_waiting:  # it yielded before it could compact: the next turn tries again
                opened.threshold_waiting = opened.turn_compacted = False
            raise

    try:
        core.jobs.start(opened.key, "compaction", PREPARE, work, background=True, yields=True)
    except PiError as exc:  # no free slot: the next append tries again
        log.info("the background draft of %s was not started: %s", opened.key, exc.message)


async def _prepare(core: Core, opened: OpenSession, base: StoredDraft | None, report: Report) -> None:
    """Make (or update) the draft; then compact at once when the threshold was crossed meanwhile."""
    if base is None:
        await drafts.leaf_stored(core, opened, None, report)
    else:
        await updated(core, opened, base, report)
    if opened.threshold_waiting:
        opened.threshold_waiting = False
        job = core.jobs.get(opened.key)
        if job is not None:
            job.yields, job.reason = False, "threshold"  # compacting now: no longer a background draft
        await automatic(core, opened, "threshold", report)


def threshold_crossed(core: Core, opened: OpenSession) -> bool:
    """The threshold was crossed while the background draft runs: it will compact when ready (``True``)."""
    job = core.jobs.get(opened.key)
    if job is None or not job.yields or job.reason != PREPARE:
        return False
    if not opened.turn_compacted:  # once per turn, as any auto-compaction
        opened.turn_compacted = opened.threshold_waiting = True
    return True


# ------------------------------------------------------------ at the threshold
async def reuse(core: Core, opened: OpenSession, reason: Reason, report: Report) -> CompactResult | None:
    """Write a kept draft instead of compacting from scratch, where it does the same job (see above)."""
    if core.hooks.declared("beforeCompact") or core.hooks.declared("reviewSummary"):
        return None
    if reason == "manual":
        stored = await _same_range(core, opened)
    else:
        stored = await _for_threshold(core, opened, report)
    if stored is None:
        return None
    report("writing the prepared draft", 95)
    entry = drafts.write(core, opened, stored)
    report("done", 100)
    return drafts.written(core, opened, stored, entry, reason)


async def for_threshold(core: Core, opened: OpenSession, reason: Reason, report: Report) -> StoredDraft | None:
    """``pi/summarize`` (no preparation) at Pi's threshold or overflow: the kept draft that holds and is
    enough, else its update; ``None`` for ``manual``. Its ``firstKeptEntryId`` is what to write."""
    if reason == "manual":
        return None
    with contextlib.suppress(ChangedUnderneathError):
        opened.session.refresh()  # what Pi wrote since the last fold-in
    return await _for_threshold(core, opened, report)


def narrowed(core: Core, opened: OpenSession, given: CompactionPreparation) -> CompactionPreparation | None:
    """Pi's preparation ``given`` with a kept draft that holds as its previous summary and only the messages
    after the draft's range to summarize (the same ``firstKeptEntryId`` is written); ``None`` when no kept
    draft starts where ``given`` starts and covers a first part of it exactly."""
    base = _holding(opened, core.drafts.drafts(opened.key))
    if base is None or base.prep is None or base.prep.previous_summary != given.previous_summary:
        return None
    covered = (*base.prep.messages_to_summarize, *base.prep.turn_prefix_messages)
    history = given.messages_to_summarize
    if not covered or len(covered) > len(history) or tuple(history[:len(covered)]) != covered:
        return None
    if len(covered) == len(history) and not given.turn_prefix_messages:
        return None  # the same range: the kept draft itself is the answer
    return attrs.evolve(given, messages_to_summarize=tuple(history[len(covered):]),
                        previous_summary=base.draft.summary)


async def _same_range(core: Core, opened: OpenSession) -> StoredDraft | None:
    if not core.drafts.drafts(opened.key):
        return None
    prep = await prepare_off_loop(opened.session, core.compaction_settings(opened))
    kept = core.drafts.same_range(opened.key, prep.first_kept_entry_id)
    return kept if kept is not None and _holding(opened, [kept]) is not None else None


async def _for_threshold(core: Core, opened: OpenSession, report: Report) -> StoredDraft | None:
    kept = _holding(opened, core.drafts.drafts(opened.key))
    if kept is None:
        return None
    compaction = core.compaction_settings(opened)
    threshold = context_window(core.settings_for(opened), opened.session.context().model) - compaction.reserve_tokens
    if _enough(kept, drafts.context_size(core, opened), threshold - compaction.keep_recent_tokens):
        return kept
    return await updated(core, opened, kept, report)


def _holding(opened: OpenSession, kept: list[StoredDraft]) -> StoredDraft | None:
    """The newest committable draft made without instructions whose range still holds at the leaf."""
    for stored in kept:
        if stored.entry is None or stored.instructions is not None:
            continue
        try:
            check_descends(opened.session, stored.leaf_id)
        except Conflict:
            continue
        return stored
    return None


def _enough(stored: StoredDraft, tokens: int, limit: int) -> bool:
    """Whether committing ``stored`` now would leave at most ``limit`` tokens (estimated, see above)."""
    return stored.draft.estimated_tokens_after + max(0, tokens - stored.tokens_at) <= limit


# ------------------------------------------------------------ updating a draft
async def updated(core: Core, opened: OpenSession, base: StoredDraft, report: Report) -> StoredDraft:
    """``base`` carried forward to the leaf: only what follows its kept range is summarized, ``base`` being
    the previous summary; ``base`` itself when nothing new is to be summarized."""
    session = opened.session
    leaf_id = session.leaf_id
    path = session.path_to()
    virtual = virtual_path(path, base)
    settings = core.compaction_settings(opened)
    prep = await asyncio.to_thread(prepare_compaction, virtual, settings)
    if prep is None or prep.nothing_to_compact:
        return base
    prep = _real_tokens_before(prep, session.projection(), path)
    report(f"updating the draft: {len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)} new messages", 5)
    return await drafts.summarized(core, opened, prep, None, report, leaf_id=leaf_id)


def virtual_path(path: list[Entry], base: StoredDraft) -> list[Entry]:
    """``path`` as if ``base`` had been written at the leaf it was prepared at (entries after it follow it)."""
    assert base.entry is not None
    at = next(i for i, e in enumerate(path) if e.id == base.leaf_id)
    entry = Entry.from_data({**base.entry, "id": VIRTUAL_ID, "parentId": base.leaf_id, "timestamp": now_iso()})
    return [*path[:at + 1], entry, *path[at + 1:]]


def _real_tokens_before(prep: CompactionPreparation, projection: Projection,
                        path: list[Entry]) -> CompactionPreparation:
    """``tokensBefore`` of the real context (the virtual path's is smaller by the summarized part)."""
    return attrs.evolve(prep, tokens_before=estimate_projected_context_tokens(projection, path).tokens)


def _ignore(message: str, percentage: int | None) -> None:
    return None

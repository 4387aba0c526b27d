"""Kept compaction drafts put to use: written at the threshold, updated from where they were, narrowed for Pi.

Contracts:

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
  compact.
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

import contextlib

import attrs

from pi_protocol import CompactResult
from pi_protocol.results import Reason
from pi_sessiond.compaction.prepare import CompactionPreparation, Prepared, prepare_compaction
from pi_sessiond.compaction.tokens import estimate_projected_context_tokens
from pi_sessiond.errors import Conflict
from pi_sessiond.pipeline.compaction import check_descends, prepare_off_loop
from pi_sessiond.service.compacting import drafts
from pi_sessiond.service.compacting.drafts import Drafts
from pi_sessiond.service.compacting.draftstore import StoredDraft
from pi_sessiond.service.interface import HookClient
from pi_sessiond.service.models import context_window
from pi_sessiond.service.progress import Report
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.layout import now_iso
from pi_sessiond.store.projection import Projection
from pi_sessiond.summarizers import workers

VIRTUAL_ID = "pi-sessiond-draft"


# ------------------------------------------------------------ at the threshold
async def reuse(maker: Drafts, hooks: HookClient, scope: Scope, reason: Reason,
                report: Report) -> CompactResult | Prepared | None:
    """Write a kept draft instead of compacting from scratch, where it does the same job (see above).

    A manual compaction that looked for a kept draft of its range and found none answers the preparation it
    made, for the compaction to use (the path is prepared once).
    """
    if hooks.declared("beforeCompact") or hooks.declared("reviewSummary"):
        return None
    if reason == "manual":
        found = await _same_range(maker, scope)
        if not isinstance(found, StoredDraft):
            return found
        stored: StoredDraft | None = found
    else:
        stored = await _for_threshold(maker, scope, report)
    if stored is None:
        return None
    report("writing the prepared draft", 95)
    entry = drafts.write(scope, stored)
    report("done", 100)
    return maker.written(scope, stored, entry, reason)


async def for_threshold(maker: Drafts, scope: Scope, reason: Reason, report: Report) -> StoredDraft | None:
    """``pi/summarize`` (no preparation) at Pi's threshold or overflow: the kept draft that holds and is
    enough, else its update; ``None`` for ``manual``. Its ``firstKeptEntryId`` is what to write."""
    if reason == "manual":
        return None
    with contextlib.suppress(ChangedUnderneathError):
        scope.session.refresh()  # what Pi wrote since the last fold-in
    return await _for_threshold(maker, scope, report)


def narrowed(maker: Drafts, scope: Scope, given: CompactionPreparation) -> CompactionPreparation | None:
    """Pi's preparation ``given`` with a kept draft that holds as its previous summary and only the messages
    after the draft's range to summarize (the same ``firstKeptEntryId`` is written); ``None`` when no kept
    draft starts where ``given`` starts and covers a first part of it exactly."""
    base = holding(scope, maker.store.drafts(scope.key))
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


async def _same_range(maker: Drafts, scope: Scope) -> StoredDraft | Prepared | None:
    """The kept draft of exactly the range a compaction now would summarize, else that preparation."""
    if not maker.store.drafts(scope.key):
        return None
    leaf_id = scope.session.leaf_id
    prep = await prepare_off_loop(scope.session, scope.compaction)
    kept = maker.store.same_range(scope.key, prep.first_kept_entry_id)
    if kept is not None and holding(scope, [kept]) is not None:
        return kept
    return Prepared(leaf_id, prep)


async def _for_threshold(maker: Drafts, scope: Scope, report: Report) -> StoredDraft | None:
    kept = holding(scope, maker.store.drafts(scope.key))
    if kept is None:
        return None
    compaction = scope.compaction
    threshold = context_window(scope.settings, scope.session.context().model) - compaction.reserve_tokens
    if enough(kept, drafts.context_size(scope), threshold - compaction.keep_recent_tokens):
        return kept
    return await updated(maker, scope, kept, report)


def holding(scope: Scope, kept: list[StoredDraft]) -> StoredDraft | None:
    """The newest committable draft made without instructions whose range still holds at the leaf."""
    for stored in kept:
        if stored.entry is None or stored.instructions is not None:
            continue
        try:
            check_descends(scope.session, stored.leaf_id)
        except Conflict:
            continue
        return stored
    return None


def enough(stored: StoredDraft, tokens: int, limit: int) -> bool:
    """Whether committing ``stored`` now would leave at most ``limit`` tokens (estimated, see above)."""
    return stored.draft.estimated_tokens_after + max(0, tokens - stored.tokens_at) <= limit


# ------------------------------------------------------------ updating a draft
async def updated(maker: Drafts, scope: Scope, base: StoredDraft, report: Report) -> StoredDraft:
    """``base`` carried forward to the leaf: only what follows its kept range is summarized, ``base`` being
    the previous summary; ``base`` itself when nothing new is to be summarized."""
    session = scope.session
    leaf_id = session.leaf_id
    path = session.path_to()
    virtual = virtual_path(path, base)
    prep = await workers.in_thread(prepare_compaction, virtual, scope.compaction)
    if prep is None or prep.nothing_to_compact:
        return base
    prep = _real_tokens_before(prep, session.projection(), path)
    report(f"updating the draft: {len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)} new messages", 5)
    return await maker.summarized(scope, prep, None, report, leaf_id=leaf_id)


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


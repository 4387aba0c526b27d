"""``pi/mask`` and ``pi/unmask``: the masking tier written as Pi 1.6.0 ``context_edit`` entries.

What is masked and the placeholder text come from :mod:`pi_sessiond.compaction.masking`.
All edits of one call are one append (one write: all or nothing). The
estimates are Pi 1.6.0's projected ones: before, the leaf's
``estimatedContextTokens``; after, the estimate of the projection with the
edits applied (usage figures are not trusted after an edit, as in Pi).
Masking changes the prompt prefix, so a provider's prompt cache misses once.
Writing edits beside a live writer would leave them on a side branch, so the
``liveWriter`` guard applies (``force`` overrides; a dry run writes nothing).
On a session a live Pi holds, the Pi extension asks ``pi/mask {dryRun: true,
reason: "threshold"}`` at Pi's turn boundary and Pi writes the edits itself.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import attrs

from pi_protocol import methods
from pi_protocol.base import JsonDict
from pi_protocol.params import MaskParams, UnmaskParams
from pi_protocol.results import MaskResult, SessionChanged
from pi_protocol.settings import Settings
from pi_sessiond.compaction.masking import Masked, MaskRule, chosen, is_masked, select
from pi_sessiond.compaction.tokens import pure_estimate, should_compact
from pi_sessiond.errors import InvalidParams
from pi_sessiond.estimators import get_estimator
from pi_sessiond.service.interface import Notify
from pi_sessiond.service.models import context_window
from pi_sessiond.service.sessions import livewriter
from pi_sessiond.service.sessions.livewriter import check_live_writer
from pi_sessiond.service.sessions.scope import Scope, require_entry
from pi_sessiond.service.stats import projected_context_tokens
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.session import Session


def rule_of(settings: Settings) -> MaskRule:
    """``compaction.masking`` as the pure selection takes it."""
    masking = settings.compaction.masking
    return MaskRule(tools=frozenset(masking.tools), min_tokens=masking.min_tokens,
                    older_than_tokens=masking.older_than_tokens)


def masking_edits(session: Session, settings: Settings, entry_ids: Sequence[str] | None = None) -> list[Masked]:
    """What to mask at the leaf: the named tool results, or what ``compaction.masking`` picks."""
    projection = session.projection()
    estimate = get_estimator(settings.tokenizer, messages=projection.messages).estimate
    if entry_ids is None:
        return select(projection, rule_of(settings), estimate)
    for entry_id in entry_ids:
        require_entry(session, entry_id, "entryIds")
    try:
        return chosen(projection, entry_ids, estimate)
    except KeyError as exc:
        raise InvalidParams(f"entryIds: {exc.args[0]} is not an unmasked tool result in the context of the leaf",
                            data={"entryId": exc.args[0]}) from None


def edit_row(target_id: str, content: Any) -> JsonDict:
    """A ``context_edit`` entry (ids and time are assigned by the append)."""
    return {"type": "context_edit", "id": "", "parentId": None, "timestamp": "", "targetId": target_id,
            "replacement": {"content": content}}


def estimate_after(session: Session, settings: Settings, replaced: dict[str, Any]) -> int:
    """The projected estimate of the leaf with the targets in ``replaced`` given that content."""
    messages: list[JsonDict] = []
    for projected in session.projection().entries:
        content = replaced.get(projected.entry.id)
        messages += ([{**m, "content": content} for m in projected.messages] if content is not None
                     else projected.messages)
    return pure_estimate(messages, get_estimator(settings.tokenizer, messages=messages).estimate)


def refuse_if_live_pi(scope: Scope) -> None:
    """Edits written beside a live Pi would never reach its context: on demand Pi has to compact itself
    (at its threshold the extension has Pi write the masking tier's edits, ``reason: "threshold"``)."""
    held = livewriter.live_pi(scope.session.path)
    if held is not None:
        raise livewriter.refuse(held, "trim the context", "/compact")


def write_edits(scope: Scope, notify: Notify, rows: list[JsonDict], reason: str) -> list[JsonDict]:
    """Append ``rows`` as one write and announce the change; returns the written entries."""
    if not rows:
        return []
    session = scope.durable()
    written = session.append(rows)
    notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id, reason=reason))
    return [dict(e.data) for e in written]


@attrs.frozen
class MaskedFirst:
    """What the masking tier did before an automatic compaction; ``enough``: no summary needed."""

    edits: list[JsonDict]
    tokens_before: int
    tokens_after: int
    enough: bool


def mask_first(scope: Scope, notify: Notify) -> MaskedFirst | None:
    """Threshold and overflow compaction with ``compaction.masking.enabled``: mask first.

    ``enough`` when the masked context is at most ``threshold - keepRecentTokens``
    (threshold = window - ``reserveTokens``, Pi's trigger): then no model is called.
    ``None`` when masking is off or finds nothing to mask.
    """
    session, settings = scope.session, scope.settings
    if not settings.compaction.masking.enabled:
        return None
    picked = masking_edits(session, settings)
    if not picked:
        return None
    before = projected_context_tokens(session, settings.tokenizer)
    rows = [edit_row(m.entry.id, [{"type": "text", "text": m.text}]) for m in picked]
    edits = write_edits(scope, notify, rows, "mask")
    after = projected_context_tokens(session, settings.tokenizer)
    compaction = scope.compaction
    window = context_window(settings, session.context().model)
    enough = after <= window - compaction.reserve_tokens - compaction.keep_recent_tokens
    return MaskedFirst(edits=edits, tokens_before=before, tokens_after=after, enough=enough)


def threshold_due(scope: Scope, tokens: int) -> bool:
    """Whether the masking tier runs now: ``compaction.enabled`` and ``compaction.masking.enabled``, and
    ``tokens`` (the leaf's context) past Pi's threshold (window − ``reserveTokens``)."""
    settings = scope.settings
    if not settings.compaction.masking.enabled:
        return False
    window = context_window(settings, scope.session.context().model)
    return should_compact(tokens, window, scope.compaction)


def mask(scope: Scope, notify: Notify, params: MaskParams) -> MaskResult:
    """``pi/mask``: mask (or with ``dryRun`` only show) the chosen tool results.

    Other writers' lines are folded in first (a live Pi's newest turn counts). With
    ``reason: "threshold"`` nothing is picked unless :func:`threshold_due`.
    """
    threshold = params.reason == "threshold"
    if threshold and params.entry_ids is not None:
        raise InvalidParams("entryIds: not with reason threshold (the masking tier picks what it masks)")
    if not params.dry_run:
        refuse_if_live_pi(scope)
        check_live_writer(scope, force=params.force, action="mask")
    with contextlib.suppress(ChangedUnderneathError):
        scope.session.refresh()
    session, settings = scope.session, scope.settings
    before = projected_context_tokens(session, settings.tokenizer)
    if threshold and not threshold_due(scope, before):
        return MaskResult(edits=[], tokens_before=before, tokens_after=before)
    picked = masking_edits(session, settings, params.entry_ids)
    blocks = {m.entry.id: [{"type": "text", "text": m.text}] for m in picked}
    after = estimate_after(session, settings, blocks) if picked else before
    rows = [edit_row(target, content) for target, content in blocks.items()]
    edits = rows if params.dry_run else write_edits(scope, notify, rows, "mask")
    return MaskResult(edits=edits, tokens_before=before, tokens_after=after)


def unmask(scope: Scope, notify: Notify, params: UnmaskParams) -> MaskResult:
    """``pi/unmask``: restore masked tool results with edits carrying their original content."""
    refuse_if_live_pi(scope)
    check_live_writer(scope, force=params.force, action="unmask")
    session, settings = scope.session, scope.settings
    shown = {p.entry.id: p for p in session.projection().entries}
    originals: dict[str, Any] = {}
    for entry_id in params.entry_ids:
        entry = require_entry(session, entry_id, "entryIds")
        projected = shown.get(entry_id)
        if projected is None or entry.message is None or not any(is_masked(m) for m in projected.messages):
            raise InvalidParams(f"entryIds: {entry_id} is not masked in the context of the leaf",
                                data={"entryId": entry_id})
        originals[entry_id] = entry.message.get("content")
    before = projected_context_tokens(session, settings.tokenizer)
    after = estimate_after(session, settings, originals)
    rows = [edit_row(target, content) for target, content in originals.items()]
    return MaskResult(edits=write_edits(scope, notify, rows, "unmask"), tokens_before=before, tokens_after=after)

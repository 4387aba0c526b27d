"""Where compaction cuts a path, exactly as Pi 1.6.0 decides it (``findProjectedCutPoint``).

All functions look at ``entries[start:end]`` of one projection
(``store/projection.py``: Pi's ``buildSessionProjection(path).entries``);
every index below is a position in that list.

Invariants:

* A valid cut point is a non-compaction entry whose projected messages hold a
  ``RoleKind.cut_point`` role (user, assistant, bashExecution, custom,
  branchSummary, compactionSummary). Tool results, system messages, omitted
  entries and empty-summary branch summaries are no cut points.
* The budget walk goes back from the newest entry summing the estimates of
  every projected message (custom, branch summaries and system messages
  count; omitted entries count 0). Once the sum reaches
  ``keep_recent_tokens`` it cuts at the first cut point at or after that
  entry, else at the last cut point (the assistant whose tool results alone
  exceed the budget); without reaching it, at the first cut point.
* Recovery suffix: when the budget was exceeded and everything after the cut
  is an omitted recovery attempt (an omitted assistant, other entries
  invisible by nature or omitted, no compaction, no edit that replaces
  content outside that suffix), the cut advances by one entry.
* The back-scan pulls directly preceding entries with no projected messages
  (metadata, edits, omitted entries) into the kept part, stopping at a
  compaction, so the cut may land on metadata.
* The turn is split iff the cut entry starts no turn (``RoleKind.turn_start``)
  and a turn start exists at or before it in the range (Pi's quirk: a cut
  moved onto metadata before a user message reports the previous turn).

``find_cut_point`` is 1.6.0's raw-entry ``findCutPoint``: the same rules over
unedited entries (each entry's ``entry_messages``), without the recovery advance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import CUT_POINT_ROLES, entry_messages, role_kind
from pi_sessiond.store.projection import ProjectedEntry

CUT_ROLES = CUT_POINT_ROLES  # the entry-kind table's


@attrs.frozen
class CutPoint:
    """Pi's ``CutPointResult``: ``turn_start_index`` is -1 when not split."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def is_cut_point(projected: ProjectedEntry) -> bool:
    """Whether the kept part may start at ``projected``."""
    if projected.entry.type == "compaction":
        return False
    return any(role_kind(m.get("role")).cut_point for m in projected.messages)


def starts_turn(projected: ProjectedEntry) -> bool:
    """Whether ``projected`` starts a turn (a user-like projected message, no compaction)."""
    if projected.entry.type == "compaction":
        return False
    return any(role_kind(m.get("role")).turn_start for m in projected.messages)


def find_valid_cut_points(entries: Sequence[ProjectedEntry], start: int, end: int) -> list[int]:
    """Indices in ``[start, end)`` where a cut is allowed, ascending."""
    return [i for i in range(start, end) if is_cut_point(entries[i])]


def find_turn_start_index(entries: Sequence[ProjectedEntry], index: int, start: int) -> int:
    """The nearest turn start at or before ``index`` (not before ``start``), else -1."""
    for i in range(index, start - 1, -1):
        if starts_turn(entries[i]):
            return i
    return -1


def _first_cut_point_from(entries: Sequence[ProjectedEntry], begin: int, end: int) -> int | None:
    for i in range(begin, end):
        if is_cut_point(entries[i]):
            return i
    return None


def _last_cut_point(entries: Sequence[ProjectedEntry], start: int, end: int) -> int:
    for i in range(end - 1, start - 1, -1):
        if is_cut_point(entries[i]):
            return i
    return start  # unreachable: the caller found a first cut point


def budget_stop(start: int, end: int, keep: int, entry_tokens: Callable[[int], int]) -> int | None:
    """Where the walk back from ``end`` first reaches ``keep`` tokens (a non-empty entry), or ``None``.

    For ``keep > 0`` that is the largest ``i`` in ``[start, end)`` whose suffix
    ``entry_tokens(i) + ... + entry_tokens(end - 1)`` is at least ``keep`` (estimates
    are never negative), which is what lets a cache move it forward after appends.
    """
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        tokens = entry_tokens(i)
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep:
            return i
    return None


def _budget_cut(entries: Sequence[ProjectedEntry], start: int, end: int, stop: int | None) -> int | None:
    """The cut where the newest messages reach the budget (``stop``), or ``None`` when they never do."""
    if stop is None:
        return None
    found = _first_cut_point_from(entries, stop, end)
    return _last_cut_point(entries, start, end) if found is None else found


def _estimated(entries: Sequence[ProjectedEntry]) -> Callable[[int], int]:
    def tokens(i: int) -> int:
        return sum(estimate_tokens(m) for m in entries[i].messages)

    return tokens


def _visible_by_nature(projected: ProjectedEntry) -> bool:
    return projected.entry.type != "context_edit" and bool(entry_messages(projected.entry))


def _omitted(projected: ProjectedEntry) -> bool:
    return not projected.messages and _visible_by_nature(projected)


def _replaces_outside(projected: ProjectedEntry, omitted_ids: set[str]) -> bool:
    data = projected.entry.data
    if projected.entry.type != "context_edit":
        return False
    replacement: Any = data.get("replacement", ...)  # a missing key is `undefined !== null` in Pi
    return replacement is not None and data.get("targetId") not in omitted_ids


def is_recovery_suffix(suffix: Sequence[ProjectedEntry]) -> bool:
    """Whether the entries after an over-budget cut are only an omitted recovery attempt.

    Three conditions, all required; the one that fails at the first ordinary (visible,
    not omitted) entry is tested first, so the usual suffix costs O(1), not O(kept part).
    """
    if not all(p.entry.type != "compaction" and (not _visible_by_nature(p) or _omitted(p)) for p in suffix):
        return False
    if not any(p.entry.type == "message" and p.entry.role == "assistant" and _omitted(p) for p in suffix):
        return False
    omitted_ids = {p.entry.id for p in suffix if _omitted(p)}
    return not any(_replaces_outside(p, omitted_ids) for p in suffix)


def _pull_preceding_metadata(entries: Sequence[ProjectedEntry], cut: int, start: int) -> int:
    while cut > start:
        previous = entries[cut - 1]
        if previous.entry.type == "compaction" or previous.messages:
            break
        cut -= 1
    return cut


def find_projected_cut_point(
    entries: Sequence[ProjectedEntry],
    start: int,
    end: int,
    keep_recent_tokens: int,
    *,
    recovery: bool = True,
    stop: Callable[[int, int, int], int | None] | None = None,
) -> CutPoint:
    """Pi 1.6.0's ``findProjectedCutPoint``: keep roughly ``keep_recent_tokens`` of the newest messages.

    ``stop(start, end, keep)``, when given, must equal :func:`budget_stop` with
    ``estimate_tokens`` summed over each entry's projected messages (the
    preparation index keeps both the estimates and the last stop, so after an
    append it moves the stop instead of walking the kept part again).
    """
    first = _first_cut_point_from(entries, start, end)
    if first is None:
        return CutPoint(start, -1, False)
    if stop is None:
        found = budget_stop(start, end, keep_recent_tokens, _estimated(entries))
    else:
        found = stop(start, end, keep_recent_tokens)
    budget_cut = _budget_cut(entries, start, end, found)
    cut = first if budget_cut is None else budget_cut
    if recovery and budget_cut is not None and is_recovery_suffix(entries[cut + 1 : end]):
        cut += 1
    cut = _pull_preceding_metadata(entries, cut, start)
    if starts_turn(entries[cut]):
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)


def find_cut_point(entries: Sequence[Entry], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """Pi 1.6.0's exported raw-entry ``findCutPoint`` (each entry unedited, no recovery advance)."""
    raw = [ProjectedEntry(e, entry_messages(e)) for e in entries]
    return find_projected_cut_point(raw, start, end, keep_recent_tokens, recovery=False)

"""Where compaction cuts a path, exactly as Pi 0.73.1 decides it.

All functions look at ``entries[start:end]`` of one root-to-leaf path.

Invariants:

* A valid cut point is a ``message`` entry whose role is ``user``,
  ``assistant``, ``bashExecution``, ``custom``, ``branchSummary`` or
  ``compactionSummary``, or a ``branch_summary`` / ``custom_message`` entry.
  A tool result is never a cut point.
* ``find_cut_point`` walks back from the newest entry summing the estimates
  of ``message`` entries only; once the sum reaches ``keep_recent_tokens`` it
  cuts at the first cut point at or after that entry (or, if there is none,
  keeps the default: the first cut point of the range). It then pulls
  directly preceding entries that are neither messages nor compactions into
  the kept part, so ``first_kept_entry_index`` may land on metadata.
* A cut on a ``user`` message is never split. Otherwise the turn start is the
  nearest ``user``/``bashExecution`` message or ``branch_summary`` /
  ``custom_message`` entry at or before the cut, and the turn is split iff
  one exists in the range (Pi's quirk: a cut moved onto metadata before a
  user message reports the previous turn as the split turn).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import CUT_POINT_ROLES

CUT_ROLES = CUT_POINT_ROLES  # the entry-kind table's; 0.73.1 and 1.6.0 agree on roles
# 0.73.1 rules kept until the cut moves onto the projection (issue 12 item 3: then
# cut points and turn starts are ``RoleKind.cut_point`` / ``turn_start`` of the
# projected messages, and these two sets go away).
_USER_LIKE_ENTRIES = frozenset({"branch_summary", "custom_message"})
_TURN_START_ROLES = frozenset({"user", "bashExecution"})


@attrs.frozen
class CutPoint:
    """Pi's ``CutPointResult``: ``turn_start_index`` is -1 when not split."""

    first_kept_entry_index: int
    turn_start_index: int
    is_split_turn: bool


def is_cut_point(entry: Entry) -> bool:
    """Whether the kept part may start at ``entry``."""
    if entry.type == "message":
        return entry.role in CUT_ROLES
    return entry.type in _USER_LIKE_ENTRIES


def find_valid_cut_points(entries: Sequence[Entry], start: int, end: int) -> list[int]:
    """Indices in ``[start, end)`` where a cut is allowed, ascending."""
    return [i for i in range(start, end) if is_cut_point(entries[i])]


def _starts_turn(entry: Entry) -> bool:
    if entry.type in _USER_LIKE_ENTRIES:
        return True
    return entry.type == "message" and entry.role in _TURN_START_ROLES


def find_turn_start_index(entries: Sequence[Entry], index: int, start: int) -> int:
    """The nearest turn start at or before ``index`` (not before ``start``), else -1."""
    for i in range(index, start - 1, -1):
        if _starts_turn(entries[i]):
            return i
    return -1


def _first_cut_point_from(entries: Sequence[Entry], begin: int, end: int) -> int | None:
    for i in range(begin, end):
        if is_cut_point(entries[i]):
            return i
    return None


def _budget_cut(entries: Sequence[Entry], start: int, end: int, keep: int, default: int) -> int:
    """Walk back summing message estimates; cut at the first cut point at/after the crossing."""
    accumulated = 0
    for i in range(end - 1, start - 1, -1):
        entry = entries[i]
        if entry.type != "message":
            continue
        message = entry.message
        accumulated += estimate_tokens(message) if message is not None else 0
        if accumulated >= keep:
            found = _first_cut_point_from(entries, i, end)
            return default if found is None else found
    return default


def _pull_preceding_metadata(entries: Sequence[Entry], cut: int, start: int) -> int:
    while cut > start and entries[cut - 1].type not in ("compaction", "message"):
        cut -= 1
    return cut


def find_cut_point(entries: Sequence[Entry], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """Pi's ``findCutPoint``: keep roughly ``keep_recent_tokens`` of the newest messages."""
    first = _first_cut_point_from(entries, start, end)
    if first is None:
        return CutPoint(start, -1, False)
    cut = _budget_cut(entries, start, end, keep_recent_tokens, first)
    cut = _pull_preceding_metadata(entries, cut, start)
    cut_entry = entries[cut]
    if cut_entry.type == "message" and cut_entry.role == "user":
        return CutPoint(cut, -1, False)
    turn_start = find_turn_start_index(entries, cut, start)
    return CutPoint(cut, turn_start, turn_start != -1)

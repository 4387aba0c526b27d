"""Branch collection and preparation for branch summaries (Pi 1.6.0's).

Entries are looked up through ``get_entry(id)`` so any store can be used.

Invariants:

* ``collect_entries_for_branch_summary``: no old leaf -> nothing. The common
  ancestor is the deepest entry of the target's path that is also on the
  old leaf's path (``None`` when disjoint or the target is unknown). The
  entries are those from the old leaf up to, not including, the common
  ancestor (stopping early at a missing parent), oldest first; compactions
  and earlier branch summaries on that stretch are included.
* ``prepare_branch_entries``: the latest ``context_edit`` per target among
  the collected entries is honoured (an omitted target contributes nothing,
  a replaced one its new content); system messages are kept and count
  tokens; tool results never become messages (so codemode nested calls are
  not seen here). File
  operations come first from every non-hook ``branch_summary`` ``details``
  (compaction details are not used), then from each message visited while
  filling the budget, newest first, including the one that overflows it.
  With ``token_budget > 0`` the walk stops at the first message that would
  exceed the budget; that message is still kept if it is a compaction or
  branch summary and the total so far is below 90% of the budget.
* Walking parents never loops: a repeated id ends the walk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.convert import entry_message
from pi_sessiond.compaction.fileops import FileOperations, FileOpsCollector
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.projection import latest_edits, project_entry

GetEntry = Callable[[str], Entry | None]

SUMMARY_ENTRY_SHARE = 0.9
_SUMMARY_ENTRIES = frozenset({"compaction", "branch_summary"})


@attrs.frozen
class BranchCollection:
    """Entries abandoned by a navigation, oldest first, and the common ancestor."""

    entries: tuple[Entry, ...]
    common_ancestor_id: str | None


@attrs.frozen
class BranchPreparation:
    """Pi's ``BranchPreparation``: messages oldest first, file ops, estimated tokens."""

    messages: tuple[JsonDict, ...]
    file_ops: FileOperations
    total_tokens: int


def _walk_up(get_entry: GetEntry, start: str | None, stop: str | None = None) -> list[Entry]:
    """Entries from ``start`` up the parent chain (leaf first), ending before ``stop``."""
    chain: list[Entry] = []
    seen: set[str] = set()
    current = start
    while current and current != stop and current not in seen:
        entry = get_entry(current)
        if entry is None:
            break
        seen.add(current)
        chain.append(entry)
        current = entry.parent_id
    return chain


def common_ancestor(get_entry: GetEntry, a: str, b: str) -> str | None:
    """The deepest entry on ``b``'s path that is also on ``a``'s path."""
    on_a = {e.id for e in _walk_up(get_entry, a)}
    for entry in _walk_up(get_entry, b):
        if entry.id in on_a:
            return entry.id
    return None


def collect_entries_for_branch_summary(
    get_entry: GetEntry, old_leaf_id: str | None, target_id: str
) -> BranchCollection:
    """Pi's ``collectEntriesForBranchSummary``."""
    if not old_leaf_id:
        return BranchCollection((), None)
    ancestor = common_ancestor(get_entry, old_leaf_id, target_id)
    chain = _walk_up(get_entry, old_leaf_id, ancestor)
    chain.reverse()
    return BranchCollection(tuple(chain), ancestor)


def branch_entry_message(entry: Entry, edit: Entry | None = None) -> JsonDict | None:
    """The message an entry contributes to a branch summary (tool results excluded), ``edit`` applied."""
    if entry.type == "message" and entry.role == "toolResult":
        return None
    if edit is not None and entry.type in ("message", "custom_message"):
        projected = project_entry(entry, edit)
        return projected[0] if projected else None
    return entry_message(entry, include_compaction=True)


def _collect_summary_details(entries: Sequence[Entry], ops: FileOpsCollector) -> None:
    for entry in entries:
        if entry.type == "branch_summary":
            ops.add_details(entry.data)


def prepare_branch_entries(entries: Sequence[Entry], token_budget: int = 0) -> BranchPreparation:
    """Pi's ``prepareBranchEntries``: newest messages first, up to the budget."""
    ops = FileOpsCollector()
    _collect_summary_details(entries, ops)
    edits = latest_edits(entries)
    kept: list[JsonDict] = []
    total = 0
    for entry in reversed(entries):
        message = branch_entry_message(entry, edits.get(entry.id))
        if message is None:
            continue
        ops.add_message(message)
        tokens = estimate_tokens(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.type in _SUMMARY_ENTRIES and total < token_budget * SUMMARY_ENTRY_SHARE:
                kept.append(message)
                total += tokens
            break
        kept.append(message)
        total += tokens
    kept.reverse()
    return BranchPreparation(tuple(kept), ops.freeze(), total)

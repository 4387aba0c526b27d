"""Compaction preparation: what to summarize, what to keep (Pi 1.6.0's ``prepareCompaction``).

``prepare_compaction(path, settings)`` takes one root-to-leaf path and works on
its projection (``store/projection.py``, Pi's ``buildSessionProjection(path)``);
its range, cut point, token counts and file lists are Pi 1.6.0's.

Invariants:

* ``None`` exactly where Pi 1.6.0 returns ``undefined``: the newest entry is
  a ``compaction``; the range has no first kept entry (or it has no id); or
  there is nothing to summarize (both message lists empty). Callers refuse
  with Pi's reason (``pipeline/compaction.py`` ``refusal``).
* The range is ``projection.entries[boundary_start:]``: the entries after the
  projected previous compaction (its kept range onwards, without the kept
  range's system messages; for a retain-none compaction, what follows it),
  else the whole projection. All indices of a preparation index
  ``preparation.projection.entries``.
* ``messages_to_summarize`` = projected (edited) messages of
  ``[boundary_start, history_end)``, ``turn_prefix_messages`` = those of
  ``[turn_start, first_kept)`` for a split turn; compaction entries and
  ``role: "system"`` messages are left out (the checkpoint carries the
  system state). Tool results are included.
* ``file_ops`` come from those messages (tool calls and codemode nested
  calls) and the previous compaction's ``details`` unless ``fromHook``.
* ``tokens_before`` = ``estimate_projected_context_tokens`` of the path.
* The result is the same with or without the live projection's preparation
  index (``prepindex.py``); the index only makes repeated calls incremental.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.cutpoint import find_projected_cut_point
from pi_sessiond.compaction.fileops import FileLists, FileOperations, compute_file_lists
from pi_sessiond.compaction.prepindex import PreparationIndex, index_of
from pi_sessiond.compaction.tokens import DEFAULT_COMPACTION_SETTINGS, CompactionSettings
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.projection import ProjectedEntry, Projection, project_path


@attrs.frozen
class CompactionPreparation:
    """Pi's ``CompactionPreparation`` plus the projection indices it was derived from."""

    first_kept_entry_id: str
    first_kept_entry_index: int
    boundary_start: int
    turn_start_index: int
    is_split_turn: bool
    messages_to_summarize: tuple[JsonDict, ...]
    turn_prefix_messages: tuple[JsonDict, ...]
    tokens_before: int
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings
    projection: Projection = attrs.field(eq=False, repr=False, factory=lambda: Projection([]))

    @property
    def nothing_to_compact(self) -> bool:
        """Always ``False`` for a preparation (Pi 1.6.0 returns none when nothing is to summarize)."""
        return not self.messages_to_summarize and not self.turn_prefix_messages

    @property
    def file_lists(self) -> FileLists:
        """``computeFileLists(fileOps)``."""
        return compute_file_lists(self.file_ops)


def summarized_messages(entries: Iterable[ProjectedEntry]) -> tuple[JsonDict, ...]:
    """Pi's ``getMessagesFromProjectedEntryForCompaction`` over ``entries``, flattened."""
    out: list[JsonDict] = []
    for projected in entries:
        if projected.entry.type == "compaction":
            continue
        for message in projected.messages:
            if message.get("role") != "system":
                out.append(message)
    return tuple(out)


def _entry_id(entry: Entry | None) -> str | None:
    if entry is None:
        return None
    raw = entry.data.get("id")
    return raw if isinstance(raw, str) and raw else None


def _previous_summary(previous: Entry | None) -> str | None:
    summary = previous.data.get("summary") if previous is not None else None
    return summary if isinstance(summary, str) else None


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    projection: Projection | None = None,
) -> CompactionPreparation | None:
    """Pi 1.6.0's ``prepareCompaction`` over a root-to-leaf path.

    ``projection``, when given, must be the projection of ``path``'s leaf. A
    snapshot of the session's live projection (``Session.projection()``) carries
    the preparation index kept from the previous call (``prepindex.py``), so a
    preparation after an append costs O(appended + kept part), not O(path).
    """
    if path and path[-1].type == "compaction":
        return None
    if projection is None:
        projection = project_path(path)
    index = index_of(projection)
    with index.lock:
        if not index.can_follow(projection):  # an older snapshot than the shared index has seen
            index = PreparationIndex()
        index.catch_up(projection)
        return _prepare(index, projection, path, settings)


def _prepare(
    index: PreparationIndex, projection: Projection, path: Sequence[Entry], settings: CompactionSettings
) -> CompactionPreparation | None:
    entries = projection.entries
    prev = index.previous_compaction()
    previous = entries[prev].entry if prev >= 0 else None
    start = prev + 1
    cut = find_projected_cut_point(entries, start, len(entries), settings.keep_recent_tokens,
                                   stop=index.budget_stop)
    kept = cut.first_kept_entry_index
    first_kept_id = _entry_id(entries[kept].entry if kept < len(entries) else None)
    if first_kept_id is None:
        return None
    if cut.is_split_turn:
        history, prefix = index.messages(start, cut.turn_start_index), index.messages(cut.turn_start_index, kept)
    else:
        history, prefix = index.messages(start, kept), ()
    if not history and not prefix:
        return None
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        first_kept_entry_index=kept,
        boundary_start=start,
        turn_start_index=cut.turn_start_index,
        is_split_turn=cut.is_split_turn,
        messages_to_summarize=history,
        turn_prefix_messages=prefix,
        tokens_before=index.context_tokens(path),
        previous_summary=_previous_summary(previous),
        file_ops=index.file_ops(start, kept, previous),
        settings=settings,
        projection=projection,
    )


@attrs.frozen
class Prepared:
    """A preparation of the path to ``leaf_id``, made before the compaction that uses it (not made again)."""

    leaf_id: str | None
    prep: CompactionPreparation

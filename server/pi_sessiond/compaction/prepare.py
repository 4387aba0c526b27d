"""Compaction preparation: what to summarize, what to keep (Pi 1.6.0's ``prepareCompaction``).

``prepare_compaction(path, settings)`` takes one root-to-leaf path and works on
its projection (``store/projection.py``, Pi's ``buildSessionProjection(path)``);
shared/reference/pi-1.6.md items 5, 6, 7 and 11.

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
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from pi_sessiond.compaction.cutpoint import CutPoint, find_projected_cut_point
from pi_sessiond.compaction.fileops import (
    FileLists,
    FileOperations,
    FileOpsCollector,
    compute_file_lists,
)
from pi_sessiond.compaction.tokens import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    estimate_projected_context_tokens,
)
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.projection import ProjectedEntry, Projection, project_path

JsonDict = dict[str, Any]


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


def previous_compaction_index(entries: Sequence[ProjectedEntry]) -> int:
    """Index of the projected previous compaction (the first compaction with messages), or -1."""
    for i, projected in enumerate(entries):
        if projected.entry.type == "compaction" and projected.messages:
            return i
    return -1


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


def _file_ops(previous: Entry | None, *groups: Sequence[JsonDict]) -> FileOperations:
    collector = FileOpsCollector()
    if previous is not None:
        collector.add_details(previous.data)
    for group in groups:
        collector.add_messages(group)
    return collector.freeze()


def _previous_summary(previous: Entry | None) -> str | None:
    summary = previous.data.get("summary") if previous is not None else None
    return summary if isinstance(summary, str) else None


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    projection: Projection | None = None,
) -> CompactionPreparation | None:
    """Pi 1.6.0's ``prepareCompaction`` over a root-to-leaf path.

    ``projection``, when given, must be the projection of ``path``'s leaf (e.g.
    the session's incrementally kept one); it saves rebuilding it.
    """
    if path and path[-1].type == "compaction":
        return None
    if projection is None:
        projection = project_path(path)
    entries = projection.entries
    prev = previous_compaction_index(entries)
    previous = entries[prev].entry if prev >= 0 else None
    start = prev + 1
    cut = find_projected_cut_point(entries, start, len(entries), settings.keep_recent_tokens)
    index = cut.first_kept_entry_index
    first_kept_id = _entry_id(entries[index].entry if index < len(entries) else None)
    if first_kept_id is None:
        return None
    history, prefix = _split(entries, start, cut)
    if not history and not prefix:
        return None
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        first_kept_entry_index=index,
        boundary_start=start,
        turn_start_index=cut.turn_start_index,
        is_split_turn=cut.is_split_turn,
        messages_to_summarize=history,
        turn_prefix_messages=prefix,
        tokens_before=estimate_projected_context_tokens(projection, path).tokens,
        previous_summary=_previous_summary(previous),
        file_ops=_file_ops(previous, history, prefix),
        settings=settings,
        projection=projection,
    )


def _split(
    entries: Sequence[ProjectedEntry], start: int, cut: CutPoint
) -> tuple[tuple[JsonDict, ...], tuple[JsonDict, ...]]:
    """(messages to summarize, turn-prefix messages) for a cut."""
    kept = cut.first_kept_entry_index
    if not cut.is_split_turn:
        return summarized_messages(entries[start:kept]), ()
    turn = cut.turn_start_index
    return summarized_messages(entries[start:turn]), summarized_messages(entries[turn:kept])

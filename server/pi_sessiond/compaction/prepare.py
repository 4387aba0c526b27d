"""Compaction preparation: what to summarize, what to keep (Pi 0.73.1).

``prepare_compaction(path, settings)`` takes one root-to-leaf path.

Invariants:

* ``None`` exactly where Pi 0.73.1 returns ``undefined``: the newest entry is
  a ``compaction``, or the path is empty (no first kept entry), or the first
  kept entry has no id.
* The range is ``[boundary_start, len(path))`` where ``boundary_start`` is
  the index of the latest compaction's ``firstKeptEntryId`` on the path,
  falling back to the entry after that compaction, or 0 without one. So a
  repeated compaction re-summarizes what the previous one kept (upstream
  #2608 fixed); compaction entries inside the range contribute no message.
* ``messages_to_summarize`` = messages of ``[boundary_start, history_end)``,
  ``turn_prefix_messages`` = messages of ``[turn_start, first_kept)`` for a
  split turn; together with the kept entries they cover the range exactly
  once. Tool results are included.
* ``tokens_before`` = ``estimate_context_tokens`` of the context rebuilt from
  the whole path (what the model really saw).
* An empty preparation is still returned, with ``nothing_to_compact`` set.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from pi_sessiond.compaction.convert import entry_message
from pi_sessiond.compaction.cutpoint import CutPoint, find_cut_point
from pi_sessiond.compaction.fileops import (
    FileLists,
    FileOperations,
    FileOpsCollector,
    compute_file_lists,
)
from pi_sessiond.compaction.tokens import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    estimate_context_tokens,
)
from pi_sessiond.store.context import build_session_context
from pi_sessiond.store.entry import Entry

JsonDict = dict[str, Any]


@attrs.frozen
class CompactionPreparation:
    """Pi's ``CompactionPreparation`` plus the indices it was derived from."""

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

    @property
    def nothing_to_compact(self) -> bool:
        """True when neither the history nor a turn prefix has a message to summarize."""
        return not self.messages_to_summarize and not self.turn_prefix_messages

    @property
    def file_lists(self) -> FileLists:
        """``computeFileLists(fileOps)``."""
        return compute_file_lists(self.file_ops)


def last_compaction_index(path: Sequence[Entry]) -> int:
    """Index of the newest ``compaction`` on the path, or -1."""
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            return i
    return -1


def compaction_range_start(path: Sequence[Entry], prev_compaction: int) -> int:
    """0.73.1's ``boundaryStart``: the previous compaction's first kept entry, if on the path."""
    if prev_compaction < 0:
        return 0
    first_kept = path[prev_compaction].data.get("firstKeptEntryId")
    if isinstance(first_kept, str):
        for i, entry in enumerate(path):
            if entry.id == first_kept:
                return i
    return prev_compaction + 1


def _messages(path: Sequence[Entry], start: int, end: int) -> tuple[JsonDict, ...]:
    found = (entry_message(path[i], include_compaction=False) for i in range(start, end))
    return tuple(m for m in found if m is not None)


def _entry_id(entry: Entry | None) -> str | None:
    if entry is None:
        return None
    raw = entry.data.get("id")
    return raw if isinstance(raw, str) and raw else None


def _file_ops(path: Sequence[Entry], prev_compaction: int, *groups: Sequence[JsonDict]) -> FileOperations:
    collector = FileOpsCollector()
    if prev_compaction >= 0:
        collector.add_details(path[prev_compaction].data)
    for group in groups:
        for message in group:
            collector.add_message(message)
    return collector.freeze()


def _previous_summary(path: Sequence[Entry], prev_compaction: int) -> str | None:
    if prev_compaction < 0:
        return None
    summary = path[prev_compaction].data.get("summary")
    return summary if isinstance(summary, str) else None


def prepare_compaction(
    path: Sequence[Entry],
    settings: CompactionSettings = DEFAULT_COMPACTION_SETTINGS,
    context_messages: Sequence[JsonDict] | None = None,
) -> CompactionPreparation | None:
    """Pi 0.73.1's ``prepareCompaction`` over a root-to-leaf path.

    ``context_messages``, when given, must be the context of ``path``'s leaf
    (e.g. the session's incrementally kept one); it saves rebuilding the whole
    context just to compute ``tokens_before``.
    """
    if path and path[-1].type == "compaction":
        return None
    prev = last_compaction_index(path)
    start = compaction_range_start(path, prev)
    if context_messages is None:
        context_messages = build_session_context(path).messages
    tokens_before = estimate_context_tokens(context_messages).tokens
    cut = find_cut_point(path, start, len(path), settings.keep_recent_tokens)
    index = cut.first_kept_entry_index
    first_kept_id = _entry_id(path[index] if index < len(path) else None)
    if first_kept_id is None:
        return None
    history, prefix = _split(path, start, cut)
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,
        first_kept_entry_index=index,
        boundary_start=start,
        turn_start_index=cut.turn_start_index,
        is_split_turn=cut.is_split_turn,
        messages_to_summarize=history,
        turn_prefix_messages=prefix,
        tokens_before=tokens_before,
        previous_summary=_previous_summary(path, prev),
        file_ops=_file_ops(path, prev, history, prefix),
        settings=settings,
    )


def _split(path: Sequence[Entry], start: int, cut: CutPoint) -> tuple[tuple[JsonDict, ...], tuple[JsonDict, ...]]:
    """(messages to summarize, turn-prefix messages) for a cut."""
    kept = cut.first_kept_entry_index
    if not cut.is_split_turn:
        return _messages(path, start, kept), ()
    return _messages(path, start, cut.turn_start_index), _messages(path, cut.turn_start_index, kept)

"""Automatic compaction after ``pi/append``: which rule decides, how often per turn, the loop guard.

Rules:
- Pi's rule: with ``compaction.autoPerTurn`` unset and the newest assistant
  message of the path written by Pi (it carries Pi's ``api`` and a ``usage``
  object, as every answer Pi writes does), only an appended assistant message
  is checked, by its own usage (Pi's ``_checkCompaction`` threshold branch),
  and one automatic compaction runs per user turn.
- The daemon's count: otherwise every append is checked with the context's
  size as ``pi/getContext`` reports it (the newest valid usage plus the
  estimates after it, or the estimate alone), and up to ``autoPerTurn``
  automatic compactions run per user turn (unset or ``0``: no limit).
- The loop guard, under both rules: none beside a running job of the session;
  after one that failed or was cancelled (a summary that frees nothing fails:
  ``notShrinking``, ``nothingToCompact``), none until the context has grown by
  a tenth of the window since, or the next user message. So a compaction that
  frees nothing is never repeated in a loop, and one that failed because the
  context grew while it ran is tried again once it has grown further.
- A user message starts a turn: the count and the guard are reset.

Starting one is ``service.compacting.preparing.Preparing.after_append``'s.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_protocol.settings import CompactionSettings
from pi_sessiond.compaction.tokens import should_compact
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session


def pi_rule(session: Session, compaction: CompactionSettings) -> bool:
    """Whether Pi's rule decides for ``session`` (see the module docstring)."""
    return compaction.auto_per_turn is None and _pi_written(session)


def limit_for(session: Session, compaction: CompactionSettings) -> int:
    """Automatic compactions allowed per turn (``0``: no limit)."""
    if pi_rule(session, compaction):
        return 1
    return compaction.auto_per_turn or 0


def count_reached(written: Sequence[Entry], tokens: int, window: int, compaction: CompactionSettings) -> bool:
    """The daemon's count is above the threshold (an append ending in an aborted answer is not checked)."""
    last = written[-1] if written else None
    if last is not None and last.role == "assistant" and (last.message or {}).get("stopReason") == "aborted":
        return False
    return should_compact(tokens, window, compaction)


def _pi_written(session: Session) -> bool:
    """Whether the newest assistant message on the leaf's path has Pi's ``api`` and a ``usage`` object."""
    for entry in session.tree.iter_up(session.leaf_id):
        if entry.type == "message" and entry.role == "assistant":
            message = entry.message or {}
            return isinstance(message.get("usage"), dict) and isinstance(message.get("api"), str)
    return False

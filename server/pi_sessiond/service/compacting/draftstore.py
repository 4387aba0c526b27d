"""The daemon's drafts: summaries made but not written, kept until ``pi/commitDraft`` or their ``expiresAt``.

Invariants:
- A draft is found by its session and id only; an id of another session is unknown.
- A draft lives :data:`DRAFT_SECONDS` from when it was made (its ``expiresAt``);
  expired and committed drafts stay known (so the answer says why it cannot be
  committed) until they are among the oldest beyond :data:`MAX_PER_SESSION` of
  their session, or the session is closed.
- Nothing here does I/O or awaits; the store lives on the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict
from pi_protocol.live import Draft
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.errors import InvalidParams

DRAFT_SECONDS = 3600.0
"""How long a draft can be committed (an hour: long enough to read and edit one, short enough not to pile up)."""
MAX_PER_SESSION = 8
DraftState = Literal["unknown", "expired", "committed"]


class UnknownDraft(InvalidParams):
    """A ``draftId`` that cannot be committed: ``data.draftState`` is ``unknown``, ``expired`` or ``committed``."""

    def __init__(self, draft_id: str, state: DraftState, message: str) -> None:
        super().__init__(message, data={"draftId": draft_id, "draftState": state})


@attrs.define(eq=False)
class StoredDraft:
    """One draft and what writing it needs.

    ``entry`` is the compaction entry to append and ``prep`` the preparation it
    summarizes, at the leaf ``leaf_id``; all ``None`` for a draft the daemon
    cannot write (a branch summary, a preparation Pi gave). ``tokens_at`` is the
    context size when it was prepared, ``instructions`` the ``customInstructions``
    it was made with (only a draft without any is reused by other requests).
    """

    draft: Draft
    expires: float
    entry: JsonDict | None = None
    prep: CompactionPreparation | None = None
    leaf_id: str | None = None
    tokens_at: int = 0
    instructions: str | None = None
    committed: bool = False


class DraftStore:
    """Drafts by session and id (see the module docstring)."""

    def __init__(self, clock: Callable[[], float] = time.time, seconds: float = DRAFT_SECONDS,
                 per_session: int = MAX_PER_SESSION) -> None:
        self._clock = clock
        self._seconds = seconds
        self._per_session = per_session
        self._by_session: dict[str, dict[str, StoredDraft]] = {}

    def add(self, draft: Draft, **fields: Any) -> StoredDraft:
        """Keep ``draft`` with :class:`StoredDraft`'s other ``fields`` (its ``expires_at`` is set here) and drop
        the session's oldest beyond the cap."""
        expires = self._clock() + self._seconds
        draft.expires_at = iso_time(expires)
        stored = StoredDraft(draft=draft, expires=expires, **fields)
        drafts = self._by_session.setdefault(draft.session_id, {})
        drafts[draft.draft_id] = stored
        while len(drafts) > self._per_session:
            del drafts[next(iter(drafts))]
        return stored

    def get(self, session_id: str, draft_id: str) -> StoredDraft:
        """The draft that can still be committed, else :class:`UnknownDraft` saying why not."""
        stored = self._by_session.get(session_id, {}).get(draft_id)
        if stored is None:
            raise UnknownDraft(draft_id, "unknown", f"draftId: no draft {draft_id!r} of session {session_id!r} "
                               "(drafts are kept in memory by the daemon that made them, until they expire)")
        if stored.committed:
            raise UnknownDraft(draft_id, "committed", f"draftId: draft {draft_id!r} was already committed")
        if self._clock() >= stored.expires:
            raise UnknownDraft(draft_id, "expired", f"draftId: draft {draft_id!r} expired at "
                               f"{stored.draft.expires_at}; make a new one")
        return stored

    def drafts(self, session_id: str) -> list[StoredDraft]:
        """The session's drafts that can still be committed, newest first."""
        now = self._clock()
        kept = self._by_session.get(session_id, {}).values()
        return [s for s in reversed(list(kept)) if not s.committed and now < s.expires]

    def same_range(self, session_id: str, first_kept_entry_id: str) -> StoredDraft | None:
        """The newest committable draft made without instructions that keeps from ``first_kept_entry_id``.

        The path to an entry never changes, so the range before it (what the draft summarizes) is the same
        for every leaf that keeps from it.
        """
        return next((s for s in self.drafts(session_id) if s.entry is not None and s.instructions is None
                     and s.draft.first_kept_entry_id == first_kept_entry_id), None)

    def forget(self, session_id: str) -> None:
        """Drop every draft of ``session_id`` (it was closed)."""
        self._by_session.pop(session_id, None)


def iso_time(epoch: float) -> str:
    """``epoch`` as ``new Date(ms).toISOString()`` writes it (UTC, milliseconds, ``Z``)."""
    moment = datetime.fromtimestamp(epoch, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

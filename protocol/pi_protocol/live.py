"""A session held by a live Pi: the lock body, ``pi/summarize`` and its DRAFT, ``pi/sessionLive``.

The Pi extension (``editors/pi``) relies on these names. The lock body is the one JSON line
the holder of ``<file>.lock`` writes (``program`` is ``pi-sessiond`` or
``pi``; ``socket`` is where a live Pi accepts forwarded requests); the same
converter writes it, so it is camelCase like the wire.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict, extra_field, keep_null
from pi_protocol.compaction import Gate
from pi_protocol.entries import RawEntry
from pi_protocol.messages import Usage
from pi_protocol.params import ProgressToken
from pi_protocol.results import HookPreparation, Reason


@attrs.define(kw_only=True)
class LockBody:
    """The body of ``<file>.lock``: who holds it, since when (ISO time), where a live Pi listens."""

    pid: int
    program: str
    since: str
    socket: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class LockHolder:
    """``data.holder`` of a ``locked`` / ``liveWriter`` error and of ``pi/sessionLive``."""

    pid: int
    program: str
    socket: str | None = None


@attrs.define(kw_only=True)
class SummarizeParams:
    """``pi/summarize``: a summary of ``preparation`` (else of the session's leaf); never writes.

    The session is named by ``session_id`` (an open session) or ``path`` (opened
    read-only if needed). ``for_request`` names a forwarded ``pi/compact`` whose
    job slot and progress token this call reuses. ``kind: "branchSummary"``
    summarizes ``entries_to_summarize`` (Pi's ``session_before_tree``
    preparation, oldest first) instead; ``replace_instructions`` as in
    ``pi/navigateTree``.
    """

    session_id: str | None = None
    path: str | None = None
    preparation: HookPreparation | None = None
    reason: Reason = "manual"
    custom_instructions: str | None = None
    for_request: str | None = None
    kind: Literal["compaction", "branchSummary"] = "compaction"
    entries_to_summarize: list[RawEntry] | None = None
    replace_instructions: bool = False
    work_done_token: ProgressToken | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class Draft:
    """DRAFT: a summary that was made but not written (``pi/summarize``, ``pi/compact`` with ``draft``).

    ``expires_at`` (ISO time): after it ``pi/commitDraft`` refuses the draft.
    Only a ``compaction`` draft the daemon prepared itself can be committed
    with ``pi/commitDraft``.
    """

    draft_id: str
    session_id: str
    kind: Literal["compaction", "branchSummary"]
    summary: str
    first_kept_entry_id: str | None = keep_null(default=None)
    tokens_before: int = 0
    estimated_tokens_after: int = 0
    details: Any = None
    usage: Usage | None = None
    gate: Gate = attrs.field(factory=Gate)
    expires_at: str | None = keep_null(default=None)


@attrs.define(kw_only=True)
class SessionLive:
    """``pi/sessionLive``: a live Pi took (``live``) or released a session."""

    session_id: str
    path: str
    live: bool
    holder: LockHolder | None = None

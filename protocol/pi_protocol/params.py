"""Parameters of every ``pi/*`` request (``docs/protocol.md`` lists them per method).

Unknown keys are tolerated (``extra``) so newer clients can talk to us; a
wrong type or a missing required field is an ``-32602`` naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict, extra_field

ProgressToken = int | str


@attrs.define(kw_only=True)
class CreateSessionParams:
    cwd: str
    session_id: str | None = None
    parent_session: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class OpenSessionParams:
    path: str | None = None
    session_id: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class SessionParams:
    """Params that only name a session (``pi/closeSession``, ``pi/getStats``)."""

    session_id: str
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ListSessionsParams:
    cwd: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class AppendParams:
    """An entry may carry its own ``id``: re-sending entries whose ids exist with the same content answers
    the same ids and writes nothing (a safe retry); other content under such an id is ``conflict``."""

    session_id: str
    entries: list[JsonDict]
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class GetContextParams:
    """``format``: ``pi`` (Pi's agent messages), ``openai`` (Chat Completions) or ``anthropic`` (Messages).
    ``wait_for_compaction``: answer once a compaction running for the session has ended."""

    session_id: str
    leaf_id: str | None = None
    format: Literal["pi", "openai", "anthropic"] = "pi"
    wait_for_compaction: bool = False
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class GetTreeParams:
    session_id: str
    root_id: str | None = None
    offset: int = 0
    limit: int | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class GetEntriesParams:
    """``ids``; or ``since`` (the entries after that one in file order, ``"root"``: every entry, as Pi's
    RPC ``get_entries``); or the path segment ``fromId`` .. ``toId`` (default: root .. leaf)."""

    session_id: str
    ids: list[str] | None = None
    since: str | None = None
    from_id: str | None = None
    to_id: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class RecordRequestParams:
    """``pi/recordRequest``: the body an agent last sent to its provider (``provider``/``model`` its model).

    ``sent_at``: when it was sent, in ms since the epoch (default: when it arrives).
    Kept in memory for cache-aware compaction, never written or logged.
    """

    session_id: str
    provider: str
    model: str
    body: JsonDict
    sent_at: float | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class SetLabelParams:
    session_id: str
    entry_id: str
    label: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class MaskParams:
    """``pi/mask``: without ``entry_ids``, what ``compaction.masking`` picks (its ``enabled`` aside).

    ``reason: "threshold"`` (absent: on demand) asks for the masking tier as it runs before a threshold
    compaction (the Pi extension asks it at Pi's turn boundary, with ``dry_run``):
    no edits unless ``compaction.enabled`` and ``compaction.masking.enabled`` and
    the leaf's context is past the threshold (window − ``reserveTokens``); not
    with ``entry_ids``.
    """

    session_id: str
    entry_ids: list[str] | None = None
    dry_run: bool = False
    reason: Literal["threshold"] | None = None
    force: bool = False
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class UnmaskParams:
    session_id: str
    entry_ids: list[str]
    force: bool = False
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class UndoParams:
    session_id: str
    entry_id: str
    force: bool = False
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ForkParams:
    session_id: str
    entry_id: str
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class EstimateTokensParams:
    session_id: str | None = None
    leaf_id: str | None = None
    text: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CompactParams:
    """``force``: write even if another program appended within ``daemon.liveWriterSeconds`` (on the newest leaf).

    ``draft``: write nothing and answer a DRAFT (``pi_protocol.live.Draft``) that
    ``pi/commitDraft`` may write later.
    """

    session_id: str
    custom_instructions: str | None = None
    force: bool = False
    draft: bool = False
    work_done_token: ProgressToken | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class CommitDraftParams:
    """``pi/commitDraft``: write the compaction DRAFT ``draft_id`` (with ``summary`` instead of its own, when given).

    ``force`` as in :class:`CompactParams`.
    """

    session_id: str
    draft_id: str
    summary: str | None = None
    force: bool = False
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class NavigateTreeParams:
    session_id: str
    target_id: str
    summarize: bool = False
    custom_instructions: str | None = None
    replace_instructions: bool = False
    label: str | None = None
    force: bool = False
    work_done_token: ProgressToken | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ReportOverflowParams:
    session_id: str
    work_done_token: ProgressToken | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class GetSettingsParams:
    session_id: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class UpdateSettingsParams:
    settings: dict[str, Any]
    session_id: str | None = None
    extra: JsonDict = extra_field()

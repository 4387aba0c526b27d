"""Results of the ``pi/*`` requests and the daemon's notifications and hook requests.

``entry``/``entries``/``header`` fields are Pi's JSON objects passed through
(:data:`~pi_protocol.entries.RawEntry`, :data:`~pi_protocol.entries.RawHeader`).
Fields marked ``keep_null`` are always present (``null`` when empty);
other fields are left out when ``null``.
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict, extra_field, keep_null
from pi_protocol.compaction import CompactionPreview, CompactResult
from pi_protocol.entries import RawEntry, RawHeader
from pi_protocol.session import SessionWarning
from pi_protocol.settings import SettingsIssue

Reason = Literal["manual", "threshold", "overflow"]


@attrs.define(kw_only=True)
class SessionInfo:
    """SESSION: what open/create/fork answer.

    ``loading`` (not in Pi): the file was opened from its end (it is
    at least ``daemon.tailOpenBytes``); ``entryCount`` and ``warnings`` cover
    only the lines read so far, and ``pi/sessionLoaded`` follows once the whole
    file is read. Until then only ``pi/getContext`` of the leaf is answered
    without waiting for it.
    """

    session_id: str
    path: str | None = keep_null(default=None)
    header: RawHeader = attrs.field(factory=dict)
    leaf_id: str | None = keep_null(default=None)
    entry_count: int = 0
    warnings: list[SessionWarning] = attrs.field(factory=list)
    loading: bool = False


@attrs.define(kw_only=True)
class SessionSummary:
    session_id: str
    path: str
    name: str | None = keep_null(default=None)
    cwd: str = ""
    modified: str | None = keep_null(default=None)
    message_count: int = 0
    first_message: str = ""


@attrs.define(kw_only=True)
class ListSessionsResult:
    sessions: list[SessionSummary] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class AppendCompaction:
    """``pi/append``'s ``compaction``: this append reached the auto-compaction threshold.

    ``started``: an automatic compaction runs for it now (``job_id`` names that job:
    one this append started, or the background draft that compacts when ready);
    ``false`` when none may start (``compaction.autoPerTurn`` reached, the loop
    guard, another job of the session running: ``job_id`` is then that job).
    """

    started: bool
    reason: Literal["threshold", "overflow"] = "threshold"
    job_id: str | None = None


@attrs.define(kw_only=True)
class AppendResult:
    """``estimated_context_tokens`` is Pi 1.6.0's projected estimate (usage older than an edit or compaction
    not trusted), the ``~N`` an editor may show while ``pi/getStats`` has ``contextTokens: null``.

    ``should_compact``: ``context_tokens`` is above the threshold (``contextWindow -
    reserveTokens``), the same test as ``pi/getContext``'s ``overThreshold``; it says
    nothing about a compaction starting (``compaction`` does). ``compaction`` is
    ``null`` when this append did not reach the threshold by the rule in force
    (``compaction.autoPerTurn``).
    """

    ids: list[str]
    leaf_id: str | None = keep_null(default=None)
    context_tokens: int = 0
    should_compact: bool = False
    estimated_context_tokens: int = 0
    compaction: AppendCompaction | None = keep_null(default=None)


@attrs.define(kw_only=True)
class TreeNode:
    id: str
    parent_id: str | None = keep_null(default=None)
    type: str = ""
    role: str | None = keep_null(default=None)
    preview: str = ""
    label: str | None = keep_null(default=None)
    timestamp: str = ""
    child_ids: list[str] = attrs.field(factory=list)
    on_active_path: bool = False


@attrs.define(kw_only=True)
class TreeResult:
    leaf_id: str | None = keep_null(default=None)
    nodes: list[TreeNode] = attrs.field(factory=list)
    total: int = 0


@attrs.define(kw_only=True)
class EntriesResult:
    entries: list[RawEntry] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class IdResult:
    id: str


@attrs.define(kw_only=True)
class EmptyResult:
    """An answer with nothing in it (``{}``)."""

    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class TokenTotals:
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total: int = 0


@attrs.define(kw_only=True)
class StatsResult:
    """``pi/getStats``: ``tokens``, ``cost`` and ``message_counts`` over the whole file (Pi 1.6.0's
    ``getSessionStats``); ``compactions`` / ``branch_summaries`` on the leaf's path; ``context_tokens``
    ``null`` after a compaction until a fresh usage, ``estimated_context_tokens`` always the estimate."""

    tokens: TokenTotals = attrs.field(factory=TokenTotals)
    cost: float = 0
    message_counts: dict[str, int] = attrs.field(factory=dict)
    compactions: int = 0
    branch_summaries: int = 0
    context_tokens: int | None = keep_null(default=None)
    context_window: int = 0
    context_percent: float | None = keep_null(default=None)
    estimated_context_tokens: int = 0


@attrs.define(kw_only=True)
class MaskResult:
    """``pi/mask`` / ``pi/unmask``: the ``context_edit`` entries written (with ``dryRun``: that would be,
    without ids) and the projected context estimate before and after them."""

    edits: list[RawEntry] = attrs.field(factory=list)
    tokens_before: int = 0
    tokens_after: int = 0


@attrs.define(kw_only=True)
class UndoResult:
    """``pi/undo``: the restored leaf and the ``custom`` entry (``pi-sessiond.undo``) that records it."""

    leaf_id: str | None = keep_null(default=None)
    entry: RawEntry


@attrs.define(kw_only=True)
class EstimateTokensResult:
    tokens: int
    estimator: str


@attrs.define(kw_only=True)
class SettingsResult:
    """``settings`` is the merged tree (``pi_protocol.settings.Settings``) unstructured: known keys only."""

    settings: dict[str, Any] = attrs.field(factory=dict)
    sources: dict[str, str] | None = None
    errors: list[SettingsIssue] | None = None


# -- notifications ------------------------------------------------------------


@attrs.define(kw_only=True)
class CompactionStarted:
    session_id: str
    reason: Reason
    will_retry: bool = False


@attrs.define(kw_only=True)
class CompactionEnded:
    """The end of an auto-compaction: ``entry`` and ``result`` (the ``pi/compact`` result) or ``error``."""

    session_id: str
    reason: Reason
    will_retry: bool = False
    entry: RawEntry | None = None
    error: str | None = None
    result: CompactResult | None = None


@attrs.define(kw_only=True)
class CompactionFailed:
    """A compaction attempt (any reason) that wrote nothing: Pi 1.6.0's ``session_compact_failed``.

    ``error_message`` is ``null`` when ``aborted`` (cancelled by the client or
    a hook), as Pi leaves it out then; ``error_reason`` is the error's
    ``reason`` (a key of :data:`~pi_protocol.errors.REASONS`; ``cancelled`` for a cancellation).
    """

    session_id: str
    reason: Reason
    error_message: str | None = keep_null(default=None)
    aborted: bool = False
    will_retry: bool = False
    error_reason: str = "internal"


@attrs.define(kw_only=True)
class Compacted:
    session_id: str
    entry: RawEntry
    reason: Reason


@attrs.define(kw_only=True)
class TreeNavigated:
    session_id: str
    old_leaf_id: str | None = keep_null(default=None)
    leaf_id: str | None = keep_null(default=None)
    entry: RawEntry | None = None


@attrs.define(kw_only=True)
class SessionLoaded:
    """``pi/sessionLoaded`` (not in Pi): a session opened with ``loading: true`` was read in full.

    ``entryCount`` and ``warnings`` are the whole file's. ``contextChanged``:
    the leaf or its context is not what ``pi/getContext`` answered while it
    was loading (a ``pi/sessionChanged`` with reason ``loaded`` went out too).
    ``error``: the read failed and the session was closed.
    """

    session_id: str
    leaf_id: str | None = keep_null(default=None)
    entry_count: int = 0
    warnings: list[SessionWarning] = attrs.field(factory=list)
    context_changed: bool = False
    error: str | None = None


@attrs.define(kw_only=True)
class SessionChanged:
    session_id: str
    leaf_id: str | None = keep_null(default=None)
    reason: str = ""


# -- hook requests (daemon -> client) --------------------------------------------


@attrs.define(kw_only=True)
class HookPreparation(CompactionPreview):
    """``preparation`` of ``pi/beforeCompact``: the preview plus the settings in force."""

    settings: dict[str, Any] = attrs.field(factory=dict)


@attrs.define(kw_only=True)
class BeforeCompactParams:
    session_id: str
    reason: Reason
    will_retry: bool
    custom_instructions: str | None = keep_null(default=None)
    preparation: HookPreparation


@attrs.define(kw_only=True)
class HookCompaction:
    """A compaction supplied by a ``pi/beforeCompact`` hook (stored with ``fromHook: true``).

    ``firstKeptEntryId: null`` (not absent) asks for a retain-none compaction,
    as Pi 1.6.0's ``appendCompaction(…, null, …)``; the explicit ``null`` is
    seen in ``extra`` (see :meth:`retains_none`).
    """

    summary: str
    first_kept_entry_id: str | None = None
    tokens_before: int | None = None
    details: Any = None
    usage: Any = None
    extra: JsonDict = extra_field()

    def retains_none(self) -> bool:
        """Whether the hook answered ``firstKeptEntryId: null`` (absent means: the prepared one)."""
        return self.first_kept_entry_id is None and "firstKeptEntryId" in self.extra


@attrs.define(kw_only=True)
class BeforeCompactAnswer:
    cancel: bool = False
    compaction: HookCompaction | None = None


@attrs.define(kw_only=True)
class BeforeTreeParams:
    session_id: str
    target_id: str
    old_leaf_id: str | None = keep_null(default=None)
    common_ancestor_id: str | None = keep_null(default=None)
    entries_to_summarize: list[RawEntry] = attrs.field(factory=list)
    user_wants_summary: bool = False
    custom_instructions: str | None = keep_null(default=None)
    replace_instructions: bool = False
    label: str | None = keep_null(default=None)


@attrs.define(kw_only=True)
class HookBranchSummary:
    summary: str
    details: Any = None
    usage: Any = None


@attrs.define(kw_only=True)
class BeforeTreeAnswer:
    cancel: bool = False
    summary: HookBranchSummary | None = None


@attrs.define(kw_only=True)
class ReviewSummaryParams:
    session_id: str
    kind: Literal["compaction", "branchSummary"]
    summary: str
    tokens_before: int
    estimated_tokens_after: int


@attrs.define(kw_only=True)
class ReviewSummaryAnswer:
    action: Literal["accept", "edit", "reject"]
    summary: str | None = None

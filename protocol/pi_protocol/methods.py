"""The method table: every ``pi/*`` request, notification and hook of the protocol, declared once.

The name constants are what other tools rely on. :data:`METHODS` says, per
client -> daemon request, its params and result classes, whether it takes a
``workDoneToken`` (progress and cancel button), which ``data.reason`` values
of :data:`~pi_protocol.errors.REASONS` it may answer besides the ones every request may
(``invalidParams``, and ``busy`` / ``tooLarge`` from the JSON-RPC layer) and a
one-line doc. The daemon registers one handler per row (its ``HANDLERS``
table binds each name to a ``Daemon`` method); ``scripts/gen_protocol.py``
generates the TypeScript types, the Neovim plugin's ``protocol.lua``,
``docs/protocol.md`` and the wire fuzzer's method list from it. Adding a method
is a row here, one ``Daemon`` method with its ``HANDLERS`` line, and its tests.
"""

from __future__ import annotations

import functools
import importlib
import operator
import types
from typing import Any, Final

import attrs

CREATE_SESSION: Final = "pi/createSession"
OPEN_SESSION: Final = "pi/openSession"
CLOSE_SESSION: Final = "pi/closeSession"
LIST_SESSIONS: Final = "pi/listSessions"
APPEND: Final = "pi/append"
GET_CONTEXT: Final = "pi/getContext"
GET_TREE: Final = "pi/getTree"
GET_ENTRIES: Final = "pi/getEntries"
SET_LABEL: Final = "pi/setLabel"
MASK: Final = "pi/mask"
UNMASK: Final = "pi/unmask"
UNDO: Final = "pi/undo"
FORK: Final = "pi/fork"
GET_STATS: Final = "pi/getStats"
ESTIMATE_TOKENS: Final = "pi/estimateTokens"
COMPACT: Final = "pi/compact"
NAVIGATE_TREE: Final = "pi/navigateTree"
REPORT_OVERFLOW: Final = "pi/reportOverflow"
GET_SETTINGS: Final = "pi/getSettings"
UPDATE_SETTINGS: Final = "pi/updateSettings"
SUMMARIZE: Final = "pi/summarize"
COMMIT_DRAFT: Final = "pi/commitDraft"
RECORD_REQUEST: Final = "pi/recordRequest"

# daemon -> client notifications
COMPACTION_STARTED: Final = "pi/compactionStarted"
COMPACTION_ENDED: Final = "pi/compactionEnded"
COMPACTED: Final = "pi/compacted"
COMPACTION_FAILED: Final = "pi/compactionFailed"
TREE_NAVIGATED: Final = "pi/treeNavigated"
SESSION_CHANGED: Final = "pi/sessionChanged"
SESSION_LIVE: Final = "pi/sessionLive"
SESSION_LOADED: Final = "pi/sessionLoaded"

# daemon -> client requests (hooks), only when declared at initialize
BEFORE_COMPACT: Final = "pi/beforeCompact"
BEFORE_TREE: Final = "pi/beforeTree"
REVIEW_SUMMARY: Final = "pi/reviewSummary"
HOOK_NAMES: Final = ("beforeCompact", "beforeTree", "reviewSummary")


WIRE_MODULES: Final = ("pi_protocol.params", "pi_protocol.results", "pi_protocol.live",
                       "pi_protocol.compaction", "pi_protocol.session")
"""Where the classes a row names live: the table is read without building them."""


@functools.cache
def wire_class(name: str) -> Any:
    """The class ``name`` of :data:`WIRE_MODULES`, or the union ``"A | B"`` of such classes."""
    if "|" in name:
        return functools.reduce(operator.or_, (wire_class(part.strip()) for part in name.split("|")))
    for module in WIRE_MODULES:
        found = getattr(importlib.import_module(module), name, None)
        if isinstance(found, type):
            return found
    raise LookupError(f"no wire class {name!r} in {', '.join(WIRE_MODULES)}")


@attrs.frozen
class MethodSpec:
    """One client -> daemon request.

    The daemon's handler of a row takes the ``params`` object (and, with
    ``progress``, a progress factory) and returns the ``result`` object
    (``None`` when ``result`` is ``None``). ``result`` is a class or a union of
    classes (``CompactResult | Draft``): the answer is an object of one of
    them (:func:`result_classes`). A row names its classes (:func:`wire_class`);
    they are built when first asked for.
    """

    name: str
    params_name: str
    result_name: str | None
    doc: str
    progress: bool = False
    errors: tuple[str, ...] = ()

    @property
    def params(self) -> type[Any]:
        """The params class."""
        return wire_class(self.params_name)  # type: ignore[no-any-return]

    @property
    def result(self) -> Any:
        """The result class, a union of classes, or ``None``."""
        return None if self.result_name is None else wire_class(self.result_name)


@attrs.frozen
class NotificationSpec:
    """One daemon -> client notification and its payload class."""

    name: str
    payload_name: str
    doc: str

    @property
    def payload(self) -> type[Any]:
        """The payload class."""
        return wire_class(self.payload_name)  # type: ignore[no-any-return]


@attrs.frozen
class HookSpec:
    """One daemon -> client request, sent only when the client declared ``hook`` at ``initialize``."""

    name: str
    hook: str
    params_name: str
    answer_name: str
    doc: str

    @property
    def params(self) -> type[Any]:
        """The params class."""
        return wire_class(self.params_name)  # type: ignore[no-any-return]

    @property
    def answer(self) -> type[Any]:
        """The answer class."""
        return wire_class(self.answer_name)  # type: ignore[no-any-return]


_SESSION: Final = ("unknownSession",)
_READ: Final = ("unknownSession", "unknownEntry")
_WRITE: Final = ("unknownSession", "unknownEntry", "locked", "writeFailed")
_EDIT: Final = ("unknownSession", "unknownEntry", "locked", "invalidParams", "liveWriter", "writeFailed")
_SUMMARIZE: Final = ("unknownSession", "locked", "nothingToCompact", "summarizerFailed", "conflict", "busy",
                     "liveWriter", "notShrinking", "summaryIncomplete", "writeFailed")

METHODS: Final = (
    MethodSpec(CREATE_SESSION, "CreateSessionParams", "SessionInfo",
               "A new session for `cwd`; its file is created with the first entry appended."),
    MethodSpec(OPEN_SESSION, "OpenSessionParams", "SessionInfo",
               "Open a session file by `path` (the same file twice is the same session) or by `sessionId`.",
               errors=("unknownSession", "locked", "notASession", "tooLarge")),
    MethodSpec(CLOSE_SESSION, "SessionParams", None,
               "Cancel the session's job, flush it and drop it from memory.", errors=_SESSION),
    MethodSpec(LIST_SESSIONS, "ListSessionsParams", "ListSessionsResult",
               "The session files (of `cwd`, or all), newest first."),
    MethodSpec(APPEND, "AppendParams", "AppendResult",
               "Append entries under the leaf (ids and timestamps assigned here); may start auto-compaction "
               "(the result's `compaction` says so).",
               errors=("unknownSession", "locked", "conflict", "tooLarge", "writeFailed")),
    MethodSpec(GET_CONTEXT, "GetContextParams", "ContextResult",
               "The LLM context of the leaf (or `leafId`), exactly as Pi's `buildSessionContext` (or as `format`'s "
               "provider messages), its size against the window; `waitForCompaction` waits for a running one.",
               errors=_READ),
    MethodSpec(GET_TREE, "GetTreeParams", "TreeResult",
               "One page of the tree's nodes, depth-first in Pi's order.", errors=_READ),
    MethodSpec(GET_ENTRIES, "GetEntriesParams", "EntriesResult",
               "Full entries by `ids`, after `since` in file order (`\"root\"`: all), or the path `fromId` .. `toId`.",
               errors=_READ),
    MethodSpec(SET_LABEL, "SetLabelParams", "IdResult",
               "Label an entry (`null` clears) with a label entry under the leaf.", errors=_WRITE),
    MethodSpec(MASK, "MaskParams", "MaskResult",
               "Replace bulky old tool results in the context by short placeholders (`context_edit` entries; "
               "the originals stay in the file). `reason: \"threshold\"`: only when `compaction.masking.enabled` "
               "and the context is past the threshold (the Pi extension asks it with `dryRun` at Pi's turn "
               "boundary and Pi writes the edits).", errors=_EDIT),
    MethodSpec(UNMASK, "UnmaskParams", "MaskResult",
               "Restore masked tool results (edits carrying the original content).", errors=_EDIT),
    MethodSpec(UNDO, "UndoParams", "UndoResult",
               "Undo the compaction or branch summary `entryId` while it is the leaf: the leaf goes back to its "
               "parent (a `custom` entry records it, so Pi reloads the same leaf); auto-compaction waits until the "
               "context grew by 10% of the window.", errors=(*_EDIT, "conflict", "busy")),
    MethodSpec(FORK, "ForkParams", "SessionInfo",
               "The path to `entryId` in a new session file, opened (Pi's `/fork`).", errors=_WRITE),
    MethodSpec(GET_STATS, "SessionParams", "StatsResult",
               "Token and cost totals, message counts and the context size.", errors=_SESSION),
    MethodSpec(ESTIMATE_TOKENS, "EstimateTokensParams", "EstimateTokensResult",
               "Estimated tokens of a `text` (one user message) or of a leaf's context.", errors=_READ),
    MethodSpec(COMPACT, "CompactParams", "CompactResult | Draft",
               "Summarize the older part of the context and append one compaction entry (by Pi, when it holds it); "
               "with `draft: true` write nothing and answer a DRAFT for `pi/commitDraft`.",
               progress=True, errors=(*_SUMMARIZE, "liveWriter")),
    MethodSpec(COMMIT_DRAFT, "CommitDraftParams", "CompactResult",
               "Write a compaction DRAFT (its `summary`, or the edited one given, as given: the gate is not re-run) "
               "on the newest leaf if the range it kept still holds, else `conflict`. An unknown, expired or "
               "committed `draftId` is `invalidParams` (`data.draftState`).",
               errors=("unknownSession", "invalidParams", "conflict", "busy", "locked", "liveWriter",
                       "notShrinking", "writeFailed")),
    MethodSpec(NAVIGATE_TREE, "NavigateTreeParams", "NavigateResult",
               "Move the leaf to `targetId` (Pi's `/tree`), optionally summarizing the branch left.",
               progress=True, errors=("unknownSession", "unknownEntry", "locked", "summarizerFailed", "conflict",
                                      "busy", "liveWriter", "writeFailed")),
    MethodSpec(REPORT_OVERFLOW, "ReportOverflowParams", "CompactResult",
               "The client's provider rejected the context as too long: waits for a running compaction, answers "
               "`alreadyFits` when one made the context fit, else compacts with reason `overflow` (once a turn).",
               progress=True, errors=_SUMMARIZE),
    MethodSpec(GET_SETTINGS, "GetSettingsParams", "SettingsResult",
               "The merged settings (of a session, or the daemon's) and each key's source.", errors=_SESSION),
    MethodSpec(UPDATE_SETTINGS, "UpdateSettingsParams", "SettingsResult",
               "Merge settings into the session layer (or the initialize layer without a session).",
               errors=_SESSION),
    MethodSpec(SUMMARIZE, "SummarizeParams", "Draft",
               "A DRAFT summary of `preparation` (else of the leaf) or of `entriesToSummarize`; never writes.",
               progress=True, errors=("unknownSession", "nothingToCompact", "summarizerFailed", "busy")),
    MethodSpec(RECORD_REQUEST, "RecordRequestParams", "EmptyResult",
               "The body an agent last sent to its provider, kept in memory only (never written or logged) so "
               "that a compaction may replay it from the provider's prompt cache (`summarizer.cacheReuse`).",
               errors=_SESSION),
)

NOTIFICATIONS: Final = (
    NotificationSpec(COMPACTION_STARTED, "CompactionStarted",
                     "An auto-compaction began (Pi RPC's `auto_compaction_start`)."),
    NotificationSpec(COMPACTION_ENDED, "CompactionEnded",
                     "An auto-compaction finished, with its `entry` or `error` (Pi RPC's `auto_compaction_end`)."),
    NotificationSpec(COMPACTED, "Compacted", "A compaction entry was written (any reason)."),
    NotificationSpec(COMPACTION_FAILED, "CompactionFailed",
                     "A compaction attempt (any reason) wrote nothing (Pi 1.6.0's `session_compact_failed`)."),
    NotificationSpec(TREE_NAVIGATED, "TreeNavigated",
                     "After `pi/navigateTree`: the old and new leaf, and the summary entry if one was written."),
    NotificationSpec(SESSION_CHANGED, "SessionChanged", "A session's leaf or entries changed, for any reason."),
    NotificationSpec(SESSION_LIVE, "SessionLive", "A live Pi took (`live: true`) or released an open session."),
    NotificationSpec(SESSION_LOADED, "SessionLoaded",
                     "A session opened with `loading: true` was read in full (a pi-sessiond addition)."),
)

HOOKS: Final = (
    HookSpec(BEFORE_COMPACT, "beforeCompact", "BeforeCompactParams", "BeforeCompactAnswer",
             "Before a compaction is summarized: answer `null` (go on), `{cancel: true}` or a `compaction`."),
    HookSpec(BEFORE_TREE, "beforeTree", "BeforeTreeParams", "BeforeTreeAnswer",
             "Before a navigation summarizes: answer `null`, `{cancel: true}` or a `summary`."),
    HookSpec(REVIEW_SUMMARY, "reviewSummary", "ReviewSummaryParams", "ReviewSummaryAnswer",
             "After a summary is made, before it is written: accept, edit or reject it."),
)

METHODS_BY_NAME: Final = {spec.name: spec for spec in METHODS}


def result_classes(result: Any) -> tuple[type[Any], ...]:
    """The classes a row's ``result`` names: ``()`` for ``None``, one class, or each member of a union."""
    if result is None:
        return ()
    members = getattr(result, "__args__", None)
    return tuple(members) if isinstance(result, types.UnionType) and members else (result,)

"""The daemon's service: one method per row of :data:`pi_protocol.methods.METHODS`.

The JSON-RPC layer calls the method :data:`HANDLERS` binds to a row: each takes the row's
params object (and, for rows with ``progress``, a ``ProgressFactory``) and returns the row's
result object (or ``None``); failures are :class:`~pi_sessiond.errors.PiError` subclasses
whose ``reason`` the JSON-RPC layer maps to a code. Methods that can run a summarizer are
coroutines; the rest are synchronous and never wait for a job. The reads hold the session's
``lock`` (the rpc layer runs them in worker threads), so a commit never changes a tree being read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from pi_protocol import (
    CompactionPreview,
    CompactResult,
    ContextResult,
    LabelEntry,
    NavigateResult,
    methods,
    unstructure,
)
from pi_protocol.base import JsonDict
from pi_protocol.live import Draft, SummarizeParams
from pi_protocol.params import (
    AppendParams,
    CommitDraftParams,
    CompactParams,
    CreateSessionParams,
    EstimateTokensParams,
    ForkParams,
    GetContextParams,
    GetEntriesParams,
    GetSettingsParams,
    GetTreeParams,
    ListSessionsParams,
    MaskParams,
    NavigateTreeParams,
    OpenSessionParams,
    RecordRequestParams,
    ReportOverflowParams,
    SessionParams,
    SetLabelParams,
    UndoParams,
    UnmaskParams,
    UpdateSettingsParams,
)
from pi_protocol.results import (
    AppendResult,
    EmptyResult,
    EntriesResult,
    EstimateTokensResult,
    IdResult,
    ListSessionsResult,
    MaskResult,
    SessionChanged,
    SessionInfo,
    SettingsResult,
    StatsResult,
    TreeResult,
    UndoResult,
)
from pi_protocol.settings import InitializationOptions
from pi_sessiond.errors import InvalidParams, NothingToCompact
from pi_sessiond.service import appending, masking, overflowing, reads, undo, views
from pi_sessiond.service.compacting import request
from pi_sessiond.service.compacting.drafts import Drafts
from pi_sessiond.service.compacting.forwarding import Forwarding
from pi_sessiond.service.compacting.live import LiveSummaries
from pi_sessiond.service.compacting.preparing import Preparing
from pi_sessiond.service.compacting.request import Compactions
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory, notifier
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.navigation import Navigator
from pi_sessiond.service.sessions import livewriter, loading
from pi_sessiond.service.sessions.idlelocks import IdleLocks
from pi_sessiond.service.sessions.registry import OpenSession, Registry
from pi_sessiond.service.sessions.scope import Scope, project_cwd, require_entry, scope_of
from pi_sessiond.service.sessions.shedding import Shedder
from pi_sessiond.service.sessions.watch import LiveWatch
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.service.summarizing import SummarizerFactory, Summarizers
from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.summarizers.factory import make_summarizer


class Daemon:
    """Open sessions, settings, jobs, hooks and notifications behind the ``pi/*`` methods."""

    def __init__(
        self,
        *,
        events: EventSink,
        hooks: HookClient,
        sessions_dir: Path | None = None,
        summarizer_factory: SummarizerFactory = make_summarizer,
        progress: ProgressFactory | None = None,
        network_client: bool = False,
        registry: Registry | None = None,
        jobs: JobManager | None = None,
    ) -> None:
        """``progress`` makes the bars of background auto-compactions (none when ``None``).

        ``network_client``: the client is on TCP or WebSocket (see :class:`SettingsStore`).
        ``registry`` and ``jobs``: the open sessions and jobs shared with the daemon's other
        connections (``rpc.sharing``); by default its own.
        """
        self.settings = settings = SettingsStore(network_client=network_client)
        self.registry = registry if registry is not None else Registry(
            sessions_dir,
            lambda: settings.settings().daemon.max_session_bytes,
            lambda: settings.settings().daemon.open_index,
            lambda: settings.settings().daemon.tail_open_bytes,
        )
        self.jobs = jobs if jobs is not None else JobManager(
            lambda: settings.settings().daemon.max_concurrent_summaries)
        self.notify = notifier(events)
        self.summarizers = summarizers = Summarizers(summarizer_factory)
        self.drafts = Drafts(self.notify, self.jobs, summarizers)
        self.compactions = Compactions(self.notify, self.jobs, hooks, summarizers, self.drafts, progress)
        self.preparing = Preparing(self.jobs, self.drafts, self.compactions, progress)
        self.forwarding = Forwarding(self.notify, self.jobs)
        self.live = LiveSummaries(self.jobs, self.drafts, self.forwarding, summarizers)
        self.navigator = Navigator(self.notify, self.jobs, hooks, summarizers)
        self._idle_locks = IdleLocks(self.registry, settings, self.jobs)
        self._shedder = Shedder(lambda key: self.jobs.get(key) is not None)
        self.live_watch = LiveWatch(self.registry, self.jobs, self.notify,
                                    lambda opened: self.preparing.after_growth(self._scope_of(opened)))
        self.registry.on_loaded = self._loaded

    # ------------------------------------------------------------ lifecycle
    def configure(self, options: InitializationOptions) -> None:
        """Apply ``initializationOptions`` (settings layer ``initialize``, ``sessionsDir``)."""
        self.live_watch.bind()
        self.settings.set_initialize(options.settings)
        if options.sessions_dir:
            self.registry.sessions_dir = Path(options.sessions_dir).expanduser()

    def update_configuration(self, settings: JsonDict) -> None:
        """``workspace/didChangeConfiguration``: replace the ``initialize`` layer.

        Accepts the SETTINGS object itself, ``{"pi": SETTINGS}`` or the whole
        ``{"settings": {"pi": SETTINGS}}`` notification params.
        """
        if isinstance(settings.get("settings"), dict):
            settings = settings["settings"]
        if isinstance(settings.get("pi"), dict):
            settings = settings["pi"]
        self.settings.set_initialize(settings)

    async def aclose(self) -> None:
        """Cancel every job (nothing half-written stays behind) and drop the sessions."""
        await self.live_watch.aclose()
        self._idle_locks.cancel()
        await self.jobs.cancel_all()
        for opened in self.registry:
            self.registry.close(opened.key)

    def max_message_bytes(self) -> int:
        """``daemon.maxMessageBytes`` daemon-wide (default < global < initialize): the framing limit."""
        return self.settings.settings().daemon.max_message_bytes

    def max_batch_items(self) -> int:
        """``daemon.maxBatchItems`` daemon-wide: the items one JSON-RPC batch may hold."""
        return self.settings.settings().daemon.max_batch_items

    def has_session(self, session_id: str) -> bool:
        """Whether ``session_id`` is open (the rpc layer's ordering asks; not a wire method)."""
        return session_id in self.registry

    def pending_load(self, session_id: str | None) -> Callable[[], object] | None:
        """What reads a session opened tail-first in full (blocking; run it off the loop), or ``None``."""
        opened = self.registry.find(session_id) if session_id is not None else None
        return None if opened is None or opened.loaded else (lambda: opened.session)

    def _loaded(self, opened: OpenSession, read: loading.Loading) -> None:
        loading.announce(self.notify, opened.key, read)
        if read.session is not None:
            self.live_watch.soon(opened.key)  # a live Pi holding it, now that its appends can be followed

    def _scope(self, session_id: str, *, fold_in: bool = True) -> Scope:
        """The request's scope: the open session (with the lines other programs appended folded in, unless
        ``fold_in`` is false: a session still read tail-first is then not waited for) and its settings."""
        opened = self.registry.get(session_id)
        self._shedder.touch(opened)  # parsed state only for the sessions used last
        if fold_in:
            self._idle_locks.arm(opened.key)  # a request may write: the idle-lock sweep runs while a lock is held
            _refresh(opened)
        return self._scope_of(opened)

    def _scope_of(self, opened: OpenSession) -> Scope:
        """The one place a request's settings are resolved (background work included)."""
        return scope_of(self.settings, opened)

    def _maybe_scope(self, session_id: str | None) -> Scope | None:
        return self._scope(session_id) if session_id is not None else None

    # -------------------------------------------------------------- sessions
    def create_session(self, params: CreateSessionParams) -> SessionInfo:
        """``pi/createSession``."""
        opened = self.registry.create(params.cwd, session_id=params.session_id, parent_session=params.parent_session)
        return views.session_info(opened)

    def open_session(self, params: OpenSessionParams) -> SessionInfo:
        """``pi/openSession``: by ``path`` (the same file twice is the same session) or ``sessionId``."""
        if params.path is not None:
            opened = self.registry.open_path(Path(params.path).expanduser())
        elif params.session_id is not None:
            opened = self.registry.open_id(params.session_id)
        else:
            raise InvalidParams("path or sessionId: one of them is required")
        if opened.loaded:
            _refresh(opened)  # already open: what other programs appended since
        self._idle_locks.arm(opened.key)  # an open may rewrite an old file under the lock
        self.live_watch.soon(opened.key)  # pi/sessionLive when a live Pi holds it
        info = views.session_info(opened)
        reading = opened.reading()
        if reading is not None:  # after SESSION is made: it says `loading` however busy the machine is
            reading.start_later(self.registry.load_delay)
        return info

    async def close_session(self, params: SessionParams) -> None:
        """``pi/closeSession``: cancel its job, drop it and its settings layer (one still loading is never read)."""
        opened = self.registry.get(params.session_id)
        await self.jobs.cancel(opened.key)
        self.registry.close(opened.key)
        self.settings.forget(opened.key)
        self.drafts.store.forget(opened.key)
        self.summarizers.recorded.forget(opened.key)

    def record_request(self, params: RecordRequestParams) -> EmptyResult:
        """``pi/recordRequest``: keep the agent's last provider request in memory (never written or logged)."""
        self.summarizers.recorded.record(self.registry.get(params.session_id).key, params)
        return EmptyResult()

    def list_sessions(self, params: ListSessionsParams) -> ListSessionsResult:
        """``pi/listSessions``, newest first."""
        return ListSessionsResult(sessions=[views.session_summary(row) for row in self.registry.listing(params.cwd)])

    async def append(self, params: AppendParams) -> AppendResult:
        """``pi/append``: may start an auto-compaction in the background."""
        return await appending.append(self._scope(params.session_id), params, self.notify, self.preparing)

    def fork(self, params: ForkParams) -> SessionInfo:
        """``pi/fork``: the path to ``entryId`` in a new file, opened."""
        source = self._scope(params.session_id).session
        with source.lock:
            require_entry(source, params.entry_id)
            directory = source.path.parent if source.path is not None else self.registry.directory_for(source.cwd)
            forked = fork_session(source, params.entry_id, directory)
        return views.session_info(self.registry.add(forked))

    def set_label(self, params: SetLabelParams) -> IdResult:
        """``pi/setLabel``: a label entry under the leaf (``null`` clears)."""
        scope = self._scope(params.session_id)
        session = scope.durable()
        require_entry(session, params.entry_id)
        entry = session.append([unstructure(LabelEntry(target_id=params.entry_id, label=params.label))])[0]
        self.notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id,
                                                            reason="label"))
        return IdResult(id=entry.id)

    def mask(self, params: MaskParams) -> MaskResult:
        """``pi/mask``: the masking tier on demand (``service.masking``)."""
        return masking.mask(self._scope(params.session_id), self.notify, params)

    def unmask(self, params: UnmaskParams) -> MaskResult:
        """``pi/unmask``: restore masked tool results."""
        return masking.unmask(self._scope(params.session_id), self.notify, params)

    def undo(self, params: UndoParams) -> UndoResult:
        """``pi/undo``: take back a compaction or branch summary that is still the leaf (``service.undo``)."""
        return undo.undo(self._scope(params.session_id), params, self.notify, self.jobs)

    # ----------------------------------------------------------------- reads
    def get_context(self, params: GetContextParams) -> ContextResult:
        """``pi/getContext``: Pi's ``buildSessionContext`` plus its size (of the leaf from the tail while loading)."""
        early = reads.early_context(self._scope(params.session_id, fold_in=False), params)
        return early if early is not None else reads.context(self._scope(params.session_id), params)

    def get_tree(self, params: GetTreeParams) -> TreeResult:
        """``pi/getTree``: one page of the nodes, depth-first in Pi's order."""
        return reads.tree(self._scope(params.session_id), params)

    def get_entries(self, params: GetEntriesParams) -> EntriesResult:
        """``pi/getEntries``: by ``ids``, after ``since`` in file order, or the path segment ``fromId`` .. ``toId``."""
        return reads.entries(self._scope(params.session_id), params)

    def get_stats(self, params: SessionParams) -> StatsResult:
        """``pi/getStats``."""
        return reads.session_stats(self._scope(params.session_id))

    def estimate_tokens(self, params: EstimateTokensParams) -> EstimateTokensResult:
        """``pi/estimateTokens`` of a text (one user message) or of a leaf's context."""
        return reads.estimate(self._maybe_scope(params.session_id), params, self.settings.settings().tokenizer)

    # ----------------------------------------------------------- summarizers
    async def compact(self, params: CompactParams, progress: ProgressFactory) -> CompactResult | Draft:
        """``pi/compact``: ``Busy`` beside another job of the session or at the global limit.

        With ``draft`` a DRAFT is made by the daemon and nothing is written (also on a session a live Pi holds).
        """
        scope = self._scope(params.session_id)
        if params.draft:
            return await self.drafts.compact_draft(scope, params, progress)
        await self.drafts.settle(scope, params.custom_instructions)  # a background draft may do it
        holder = livewriter.live_pi(scope.session.path)
        if holder is not None:  # a live Pi holds it: Pi compacts (its leaf moves on)
            return await self.forwarding.compact_in_pi(scope, holder, params, progress)
        return await self.compactions.manual(scope, params, progress)

    async def commit_draft(self, params: CommitDraftParams) -> CompactResult:
        """``pi/commitDraft``: write a compaction DRAFT under the leaf rules of this moment."""
        return await self.drafts.commit(self._scope(params.session_id), params)

    def preview_compaction(self, params: CompactParams) -> CompactionPreview:
        """``compact --dry-run`` (not a wire method): what ``pi/beforeCompact`` would show, without settings."""
        return request.preview(self._scope(params.session_id), params.custom_instructions, self.summarizers)

    async def report_overflow(self, params: ReportOverflowParams, progress: ProgressFactory) -> CompactResult:
        """``pi/reportOverflow`` (``service.overflowing``): waits for a running compaction, answers
        ``alreadyFits`` when one made the context fit, else compacts with reason ``overflow``."""
        scope = self._scope(params.session_id)
        if not scope.settings.compaction.enabled:
            raise NothingToCompact("auto-compaction is disabled (compaction.enabled is false)")
        await self.jobs.settled(scope.key)
        await self.drafts.settle(scope, None)  # a background draft may do it
        fitted = overflowing.already_fits(scope)
        if fitted is not None:
            return fitted
        return overflowing.answered(scope, await self.compactions.overflow(scope, params, progress))

    async def compaction_settled(self, params: GetContextParams) -> None:
        """Before ``pi/getContext`` with ``waitForCompaction``: the session's running compaction has ended."""
        if params.wait_for_compaction and params.session_id in self.registry:
            await self.jobs.settled(params.session_id)

    async def navigate_tree(self, params: NavigateTreeParams, progress: ProgressFactory) -> NavigateResult:
        """``pi/navigateTree``."""
        return await self.navigator.navigate(self._scope(params.session_id), params, progress)

    async def summarize(self, params: SummarizeParams, progress: ProgressFactory) -> Draft:
        """``pi/summarize``: a DRAFT, nothing written (the Pi extension's summaries), of an open ``sessionId``,
        else of ``path`` (opened if needed, read-only)."""
        opened = self.registry.get_or_open(params.session_id, params.path)
        return await self.live.summarize(self._scope_of(opened), params, progress)

    # -------------------------------------------------------------- settings
    def get_settings(self, params: GetSettingsParams) -> SettingsResult:
        """``pi/getSettings``: the merged settings (known keys), each leaf key's source, the files' issues."""
        scope = self._maybe_scope(params.session_id)
        return self.settings.result(scope.key if scope else None, project_cwd(scope.session) if scope else None)

    def update_settings(self, params: UpdateSettingsParams) -> SettingsResult:
        """``pi/updateSettings``: merge into the session layer (or the initialize layer without a session)."""
        key = self._scope(params.session_id).key if params.session_id is not None else None
        self.settings.update(params.settings, key)
        scope = self._maybe_scope(params.session_id)  # resolved after the change
        cwd = project_cwd(scope.session) if scope else None
        return self.settings.result(scope.key if scope else None, cwd, sources=False)


def _refresh(opened: OpenSession) -> None:
    """Fold in what other programs appended; a replaced file is reported by the next write, not here."""
    with contextlib.suppress(ChangedUnderneathError):
        opened.session.refresh()


HANDLERS: Final[Mapping[str, Callable[..., Any]]] = MappingProxyType({
    methods.CREATE_SESSION: Daemon.create_session,
    methods.OPEN_SESSION: Daemon.open_session,
    methods.CLOSE_SESSION: Daemon.close_session,
    methods.LIST_SESSIONS: Daemon.list_sessions,
    methods.APPEND: Daemon.append,
    methods.GET_CONTEXT: Daemon.get_context,
    methods.GET_TREE: Daemon.get_tree,
    methods.GET_ENTRIES: Daemon.get_entries,
    methods.SET_LABEL: Daemon.set_label,
    methods.MASK: Daemon.mask,
    methods.UNMASK: Daemon.unmask,
    methods.UNDO: Daemon.undo,
    methods.FORK: Daemon.fork,
    methods.GET_STATS: Daemon.get_stats,
    methods.ESTIMATE_TOKENS: Daemon.estimate_tokens,
    methods.COMPACT: Daemon.compact,
    methods.COMMIT_DRAFT: Daemon.commit_draft,
    methods.NAVIGATE_TREE: Daemon.navigate_tree,
    methods.REPORT_OVERFLOW: Daemon.report_overflow,
    methods.GET_SETTINGS: Daemon.get_settings,
    methods.UPDATE_SETTINGS: Daemon.update_settings,
    methods.SUMMARIZE: Daemon.summarize,
    methods.RECORD_REQUEST: Daemon.record_request,
})
"""The ``Daemon`` method answering each row of :data:`pi_protocol.methods.METHODS` (called with the daemon first)."""

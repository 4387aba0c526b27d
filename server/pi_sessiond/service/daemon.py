"""The daemon's service: one method per row of :data:`pi_protocol.methods.METHODS`.

The JSON-RPC layer calls the method a row names (``MethodSpec.service``)
directly: each takes the row's params object (and, for rows with
``progress``, a :class:`~pi_sessiond.service.interface.ProgressFactory`) and
returns the row's result object (or ``None``); failures are
:class:`~pi_sessiond.errors.PiError` subclasses whose ``reason`` the
JSON-RPC layer maps to a code. Methods that can run a
summarizer are coroutines; the rest are synchronous and never wait for a job.
The reads hold the session's ``lock`` (the rpc layer runs them in worker
threads, ``rpc/offload.py``), so a commit never changes a tree being read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pi_protocol import (
    CompactionPreview,
    CompactResult,
    ContextResult,
    LabelEntry,
    NavigateResult,
    methods,
    unstructure,
)
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
    InitializationOptions,
    ListSessionsParams,
    MaskParams,
    NavigateTreeParams,
    OpenSessionParams,
    ReportOverflowParams,
    SessionParams,
    SetLabelParams,
    UndoParams,
    UnmaskParams,
    UpdateSettingsParams,
)
from pi_protocol.results import (
    AppendResult,
    EntriesResult,
    EstimateTokensResult,
    IdResult,
    ListSessionsResult,
    MaskResult,
    SessionChanged,
    SessionInfo,
    SessionSummary,
    SettingsResult,
    StatsResult,
    TreeResult,
    UndoResult,
)
from pi_sessiond.errors import InvalidParams
from pi_sessiond.service import (
    appending,
    compaction,
    drafts,
    forwarding,
    live,
    livewriter,
    loading,
    masking,
    stats,
    tree,
    undo,
    views,
)
from pi_sessiond.service.core import Core, SummarizerFactory, apply_durability, project_cwd
from pi_sessiond.service.idlelocks import IdleLocks
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.registry import OpenSession, Registry
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.service.watch import LiveWatch
from pi_sessiond.settings.redact import redact_settings
from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.factory import make_summarizer

JsonDict = dict[str, Any]


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
    ) -> None:
        """``progress`` makes the bars of background auto-compactions (none when ``None``).

        ``network_client``: the client is on TCP or WebSocket (see :class:`SettingsStore`).
        """
        settings = SettingsStore(network_client=network_client)
        self.core = Core(
            events=events,
            hooks=hooks,
            registry=Registry(
                sessions_dir,
                lambda: settings.settings().daemon.max_session_bytes,
                lambda: settings.settings().daemon.open_index,
                lambda: settings.settings().daemon.tail_open_bytes,
            ),
            settings=settings,
            jobs=JobManager(self._max_jobs),
            summarizer_factory=summarizer_factory,
            background_progress=progress,
        )
        self._idle_locks = IdleLocks(self.core)
        self.live_watch = LiveWatch(self.core)
        self.core.registry.on_loaded = self._loaded

    # ------------------------------------------------------------ lifecycle
    def configure(self, options: InitializationOptions) -> None:
        """Apply ``initializationOptions`` (settings layer ``initialize``, ``sessionsDir``)."""
        self.live_watch.bind()
        self.core.settings.set_initialize(options.settings)
        if options.sessions_dir:
            self.core.registry.sessions_dir = Path(options.sessions_dir).expanduser()

    def update_configuration(self, settings: JsonDict) -> None:
        """``workspace/didChangeConfiguration``: replace the ``initialize`` layer.

        Accepts the SETTINGS object itself, ``{"pi": SETTINGS}`` or the whole
        ``{"settings": {"pi": SETTINGS}}`` notification params.
        """
        if isinstance(settings.get("settings"), dict):
            settings = settings["settings"]
        if isinstance(settings.get("pi"), dict):
            settings = settings["pi"]
        self.core.settings.set_initialize(settings)

    async def aclose(self) -> None:
        """Cancel every job (nothing half-written stays behind) and drop the sessions."""
        await self.live_watch.aclose()
        self._idle_locks.cancel()
        await self.core.jobs.cancel_all()
        for opened in self.core.registry:
            self.core.registry.close(opened.key)

    def _max_jobs(self) -> int:
        return self.core.settings.settings().daemon.max_concurrent_summaries

    def max_message_bytes(self) -> int:
        """``daemon.maxMessageBytes`` daemon-wide (default < global < initialize): the framing limit."""
        return self.core.settings.settings().daemon.max_message_bytes

    def max_batch_items(self) -> int:
        """``daemon.maxBatchItems`` daemon-wide: the items one JSON-RPC batch may hold."""
        return self.core.settings.settings().daemon.max_batch_items

    def has_session(self, session_id: str) -> bool:
        """Whether ``session_id`` is open (the rpc layer's ordering asks; not a wire method)."""
        return session_id in self.core.registry

    def pending_load(self, session_id: str | None) -> Callable[[], object] | None:
        """What reads a session opened tail-first in full (blocking; run it off the loop), or ``None``."""
        opened = self.core.registry.find(session_id) if session_id is not None else None
        return None if opened is None or opened.loaded else (lambda: opened.session)

    def _loaded(self, opened: OpenSession, read: loading.Loading) -> None:
        loading.announce(self.core.notify, opened, read)
        if read.session is not None:
            self.live_watch.soon()  # a live Pi holding it, now that its appends can be followed

    def _get(self, session_id: str) -> OpenSession:
        """The open session, with the lines other programs appended folded in."""
        self._idle_locks.arm()  # a request may write: the idle-lock sweep runs while a lock is held
        opened = self.core.registry.get(session_id)
        _refresh(opened)
        return opened

    # -------------------------------------------------------------- sessions
    def create_session(self, params: CreateSessionParams) -> SessionInfo:
        """``pi/createSession``."""
        opened = self.core.registry.create(
            params.cwd, session_id=params.session_id, parent_session=params.parent_session
        )
        return views.session_info(opened)

    def open_session(self, params: OpenSessionParams) -> SessionInfo:
        """``pi/openSession``: by ``path`` (the same file twice is the same session) or ``sessionId``."""
        if params.path is not None:
            opened = self.core.registry.open_path(Path(params.path).expanduser())
        elif params.session_id is not None:
            opened = self.core.registry.open_id(params.session_id)
        else:
            raise InvalidParams("path or sessionId: one of them is required")
        if opened.loaded:
            _refresh(opened)  # already open: what other programs appended since
        self.live_watch.soon()  # pi/sessionLive when a live Pi holds it
        info = views.session_info(opened)
        reading = opened.reading()
        if reading is not None:  # after SESSION is made: it says `loading` however busy the machine is
            reading.start_later(self.core.registry.load_delay)
        return info

    async def close_session(self, params: SessionParams) -> None:
        """``pi/closeSession``: cancel its job, drop it and its settings layer (one still loading is never read)."""
        opened = self.core.registry.get(params.session_id)
        await self.core.jobs.cancel(opened.key)
        self.core.registry.close(opened.key)
        self.core.settings.forget(opened.key)
        self.core.drafts.forget(opened.key)

    def list_sessions(self, params: ListSessionsParams) -> ListSessionsResult:
        """``pi/listSessions``, newest first."""
        rows = self.core.registry.listing(params.cwd)
        return ListSessionsResult(sessions=[_summary(r) for r in rows])

    async def append(self, params: AppendParams) -> AppendResult:
        """``pi/append``: may start an auto-compaction in the background."""
        return await appending.append(self.core, self._get(params.session_id), params)

    def fork(self, params: ForkParams) -> SessionInfo:
        """``pi/fork``: the path to ``entryId`` in a new file, opened."""
        source = self._get(params.session_id).session
        with source.lock:
            views.require_entry(source, params.entry_id)
            directory = source.path.parent if source.path is not None else self.core.registry.directory_for(source.cwd)
            forked = fork_session(source, params.entry_id, directory)
        return views.session_info(self.core.registry.add(forked))

    def set_label(self, params: SetLabelParams) -> IdResult:
        """``pi/setLabel``: a label entry under the leaf (``null`` clears)."""
        opened = self._get(params.session_id)
        session = opened.session
        views.require_entry(session, params.entry_id)
        row = unstructure(LabelEntry(target_id=params.entry_id, label=params.label))
        apply_durability(session, self.core.settings_for(opened))
        entry = session.append([row])[0]
        self.core.notify(methods.SESSION_CHANGED, SessionChanged(session_id=opened.key, leaf_id=session.leaf_id,
                                                                 reason="label"))
        return IdResult(id=entry.id)

    def mask(self, params: MaskParams) -> MaskResult:
        """``pi/mask``: the masking tier on demand (``service.masking``)."""
        return masking.mask(self.core, self._get(params.session_id), params)

    def unmask(self, params: UnmaskParams) -> MaskResult:
        """``pi/unmask``: restore masked tool results."""
        return masking.unmask(self.core, self._get(params.session_id), params)

    def undo(self, params: UndoParams) -> UndoResult:
        """``pi/undo``: take back a compaction or branch summary that is still the leaf (``service.undo``)."""
        return undo.undo(self.core, self._get(params.session_id), params)

    # ----------------------------------------------------------------- reads
    def get_context(self, params: GetContextParams) -> ContextResult:
        """``pi/getContext``: Pi's ``buildSessionContext`` plus its size (of the leaf from the tail while loading)."""
        opened = self.core.registry.get(params.session_id)
        reading = opened.reading()
        early = reading.early_context(params.leaf_id) if reading is not None else None
        if reading is not None and early is not None:
            return self._context_result(opened, reading.provisional, early, None)
        opened = self._get(params.session_id)
        session = opened.session
        with session.lock:
            if params.leaf_id is not None:
                views.require_entry(session, params.leaf_id, "leafId")
            context = session.context() if params.leaf_id is None else session.context(params.leaf_id)
            return self._context_result(opened, session, context, params.leaf_id)

    def _context_result(self, opened: OpenSession, session: Session, context: SessionContext,
                        leaf_id: str | None) -> ContextResult:
        tokens = stats.leaf_context_tokens(session, context.messages, self.core.settings_for(opened).tokenizer, leaf_id)
        return ContextResult(messages=list(context.messages), thinking_level=context.thinking_level,
                             model=context.model, tokens=tokens)

    def get_tree(self, params: GetTreeParams) -> TreeResult:
        """``pi/getTree``: one page of the nodes, depth-first in Pi's order."""
        session = self._get(params.session_id).session
        with session.lock:
            return views.tree(session, params.root_id, params.offset, params.limit)

    def get_entries(self, params: GetEntriesParams) -> EntriesResult:
        """``pi/getEntries``: by ``ids``, after ``since`` in file order, or the path segment ``fromId`` .. ``toId``."""
        session = self._get(params.session_id).session
        with session.lock:
            if params.ids is not None:
                return EntriesResult(entries=views.entries_by_ids(session, params.ids))
            if params.since is not None:
                return EntriesResult(entries=views.entries_since(session, params.since))
            return EntriesResult(entries=views.path_segment(session, params.from_id, params.to_id))

    def get_stats(self, params: SessionParams) -> StatsResult:
        """``pi/getStats``."""
        opened = self._get(params.session_id)
        with opened.session.lock:
            return stats.session_stats(opened.session, self.core.settings_for(opened))

    def estimate_tokens(self, params: EstimateTokensParams) -> EstimateTokensResult:
        """``pi/estimateTokens`` of a text (one user message) or of a leaf's context."""
        opened = self._get(params.session_id) if params.session_id is not None else None
        name = self.core.settings_for(opened).tokenizer
        if params.text is not None:
            message = {"role": "user", "content": params.text}
            return EstimateTokensResult(tokens=stats.estimate_messages([message], name),
                                        estimator=stats.estimator_name(name, [message]))
        if opened is None:
            raise InvalidParams("text or sessionId: one of them is required")
        session = opened.session
        with session.lock:
            if params.leaf_id is not None:
                views.require_entry(session, params.leaf_id, "leafId")
            messages = (session.context() if params.leaf_id is None else session.context(params.leaf_id)).messages
            tokens = stats.leaf_context_tokens(session, messages, name, params.leaf_id)
        return EstimateTokensResult(tokens=tokens, estimator=stats.estimator_name(name, messages))

    # ----------------------------------------------------------- summarizers
    async def compact(self, params: CompactParams, progress: ProgressFactory) -> CompactResult | Draft:
        """``pi/compact``: ``Busy`` beside another job of the session or at the global limit.

        With ``draft`` a DRAFT is made by the daemon and nothing is written (also on a session a live Pi holds).
        """
        opened = self._get(params.session_id)
        if params.draft:
            return await drafts.compact_draft(self.core, opened, params, progress)
        await drafts.settle(self.core, opened, params.custom_instructions)  # a background draft may do it
        holder = livewriter.live_pi(opened.session.path)
        if holder is not None:  # a live Pi holds it: Pi compacts (its leaf moves on)
            return await forwarding.compact_in_pi(self.core, opened, holder, params, progress)
        return await compaction.manual(self.core, opened, params, progress)

    async def commit_draft(self, params: CommitDraftParams) -> CompactResult:
        """``pi/commitDraft``: write a compaction DRAFT under the leaf rules of this moment (``service.drafts``)."""
        return await drafts.commit(self.core, self._get(params.session_id), params)

    def preview_compaction(self, params: CompactParams) -> CompactionPreview:
        """``compact --dry-run`` (not a wire method): what ``pi/beforeCompact`` would show, without settings."""
        return compaction.preview(self.core, self._get(params.session_id), params.custom_instructions)

    async def report_overflow(self, params: ReportOverflowParams, progress: ProgressFactory) -> CompactResult:
        """``pi/reportOverflow``: compaction with reason ``overflow`` and ``willRetry: true``."""
        opened = self._get(params.session_id)
        await drafts.settle(self.core, opened, None)  # a background draft may do it
        return await compaction.overflow(self.core, opened, params, progress)

    async def navigate_tree(self, params: NavigateTreeParams, progress: ProgressFactory) -> NavigateResult:
        """``pi/navigateTree``."""
        return await tree.navigate(self.core, self._get(params.session_id), params, progress)

    # -------------------------------------------------------------- settings
    async def summarize(self, params: SummarizeParams, progress: ProgressFactory) -> Draft:
        """``pi/summarize``: a DRAFT, nothing written (the Pi extension's summaries)."""
        return await live.summarize(self.core, params, progress)

    def get_settings(self, params: GetSettingsParams) -> SettingsResult:
        """``pi/getSettings``: the merged settings (known keys), each leaf key's source, the files' issues."""
        opened = self._get(params.session_id) if params.session_id is not None else None
        cwd = project_cwd(opened.session) if opened is not None else None
        resolved = self.core.settings.resolved(opened.key if opened else None, cwd)
        return SettingsResult(settings=redact_settings(unstructure(resolved.settings)), sources=resolved.sources,
                              errors=list(resolved.errors))

    def update_settings(self, params: UpdateSettingsParams) -> SettingsResult:
        """``pi/updateSettings``: merge into the session layer (or the initialize layer without a session)."""
        opened = self._get(params.session_id) if params.session_id is not None else None
        self.core.settings.update(params.settings, opened.key if opened else None)
        return SettingsResult(settings=redact_settings(unstructure(self.core.settings_for(opened))))


def _refresh(opened: OpenSession) -> None:
    """Fold in what other programs appended; a replaced file is reported by the next write, not here."""
    with contextlib.suppress(ChangedUnderneathError):
        opened.session.refresh()


def _summary(row: JsonDict) -> SessionSummary:
    return SessionSummary(
        session_id=str(row.get("sessionId") or ""),
        path=str(row.get("path") or ""),
        name=row.get("name"),
        cwd=str(row.get("cwd") or ""),
        modified=row.get("modified"),
        message_count=int(row.get("messageCount") or 0),
        first_message=str(row.get("firstMessage") or ""),
    )

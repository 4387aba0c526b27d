"""What every service module shares: the open sessions, settings, jobs and the client seams.

Hooks are asked through :mod:`pi_sessiond.service.hooks`. Failures are
:class:`pi_sessiond.errors.PiError` from whichever layer raised them; nothing
here translates them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs

from pi_protocol import unstructure
from pi_protocol.settings import CompactionSettings, Settings
from pi_sessiond.pipeline.requests import OutputLimit
from pi_sessiond.pipeline.summaries import RunOptions
from pi_sessiond.service.draftstore import DraftStore
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.models import summarizer_max_output
from pi_sessiond.service.registry import OpenSession, Registry
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.settings import compaction_for
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.config import SummarizerSettings, summarizer_settings

SummarizerFactory = Callable[[SummarizerSettings], Summarizer]
Report = Callable[[str, int | None], None]
log = logging.getLogger("pi_sessiond.service")


@attrs.define(eq=False)
class Core:
    """The daemon's state, shared by the service modules."""

    events: EventSink
    hooks: HookClient
    registry: Registry
    settings: SettingsStore
    jobs: JobManager
    summarizer_factory: SummarizerFactory
    background_progress: ProgressFactory | None = None
    forwarded: dict[str, Report] = attrs.field(factory=dict)
    """``pi/compact`` requests forwarded to a live Pi, by id: the progress report ``forRequest`` reuses."""
    drafts: DraftStore = attrs.field(factory=DraftStore)
    """Summaries made but not written (``pi/compact {draft: true}``, ``pi/summarize``), for ``pi/commitDraft``."""

    def settings_for(self, opened: OpenSession | None) -> Settings:
        """The typed settings in force for ``opened`` (or the daemon's, for ``None``)."""
        if opened is None:
            return self.settings.settings()
        return self.settings.settings(opened.key, project_cwd(opened.peek()))

    def summarizer(self, settings: Settings) -> Summarizer:
        """A summarizer built from ``summarizer.*`` (close it with ``aclose``)."""
        return self.summarizer_factory(summarizer_settings(settings.summarizer))

    def compaction_settings(self, opened: OpenSession, settings: Settings | None = None) -> CompactionSettings:
        """``compaction.*`` resolved for the session's model (``compaction.modelOverrides``)."""
        settings = settings or self.settings_for(opened)
        return compaction_for(settings.compaction, opened.session.context().model)

    def run_options(self, settings: Settings, report: Report | None = None) -> RunOptions:
        """How summaries are asked for under ``settings``; each retry is reported through ``report``."""
        section = settings.summarizer
        limit = OutputLimit(
            max_tokens=section.max_tokens,
            model_max_output=summarizer_max_output(settings),
            context_window=section.context_window,
        )
        on_retry = (lambda notice: report(notice.message, None)) if report is not None else None
        return RunOptions(
            limit=limit, retry=settings.retry, parallel_split_turn=section.parallel_split_turn, on_retry=on_retry
        )

    def notify(self, method: str, payload: Any) -> None:
        """Send a notification as plain JSON; a failing sink is logged, never fatal."""
        try:
            self.events.notify(method, unstructure(payload))
        except Exception:
            log.exception("could not send %s", method)


def project_cwd(session: Session) -> str | None:
    """The session's ``cwd`` for its project settings; ``None`` when it names no folder (empty, a NUL byte).

    A header's ``cwd`` is whatever the file says; one with a NUL byte cannot be
    a path, so no project layer applies (the open warned about it) and every
    method keeps working.
    """
    cwd = session.cwd
    return cwd if cwd and "\0" not in cwd else None


def apply_durability(session: Session, settings: Settings) -> None:
    """``daemon.fsync``: ``always`` fsyncs every append, ``never`` does not."""
    session.fsync = settings.daemon.fsync != "never"

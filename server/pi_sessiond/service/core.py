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
from pi_protocol.settings import Settings
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.registry import OpenSession, Registry
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.config import SummarizerSettings, summarizer_settings

SummarizerFactory = Callable[[SummarizerSettings], Summarizer]
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

    def settings_for(self, opened: OpenSession | None) -> Settings:
        """The typed settings in force for ``opened`` (or the daemon's, for ``None``)."""
        if opened is None:
            return self.settings.settings()
        return self.settings.settings(opened.key, opened.session.cwd)

    def summarizer(self, settings: Settings) -> Summarizer:
        """A summarizer built from ``summarizer.*`` (close it with ``aclose``)."""
        return self.summarizer_factory(summarizer_settings(settings.summarizer))

    def notify(self, method: str, payload: Any) -> None:
        """Send a notification as plain JSON; a failing sink is logged, never fatal."""
        try:
            self.events.notify(method, unstructure(payload))
        except Exception:
            log.exception("could not send %s", method)


def apply_durability(session: Session, settings: Settings) -> None:
    """``daemon.fsync``: ``always`` fsyncs every append, ``never`` does not."""
    session.fsync = settings.daemon.fsync != "never"

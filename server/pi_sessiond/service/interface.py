"""The seams between the services and the JSON-RPC layer.

The services never import pygls. They report to the client through an
:class:`EventSink` (notifications), ask it through a :class:`HookClient`
(server -> client requests, only for hooks it declared) and show progress
through a :class:`Progress` made by a :class:`ProgressFactory` per request.
The JSON-RPC layer implements these with pygls; tests can implement them
with plain objects.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from pi_protocol import unstructure

log = logging.getLogger("pi_sessiond.service")


class EventSink(Protocol):
    """Sends daemon -> client notifications (``pi/compacted``, ``pi/sessionChanged``…)."""

    def notify(self, method: str, payload: Any) -> None:
        """``payload`` is a ``pi_protocol`` attrs object or plain JSON data."""
        ...


class HookClient(Protocol):
    """Calls the client's declared hooks."""

    def declared(self, hook: str) -> bool:
        """Whether the client declared ``hook`` (``beforeCompact``, ``beforeTree``, ``reviewSummary``)."""
        ...

    async def request(self, method: str, payload: Any, timeout: float | None) -> Any:
        """Send a request and return the raw JSON answer.

        Raises ``TimeoutError`` after ``timeout`` seconds (``None``: wait) and
        any exception when the client answers with an error; callers log and
        ignore those (a failing hook never blocks the default path).
        """
        ...


class Progress(Protocol):
    """One work-done progress bar (begin is sent when it is created)."""

    def report(self, message: str, percentage: int | None = None) -> None:
        """A report: the phase and, when known, a percentage."""
        ...

    def end(self, message: str) -> None:
        """The end; safe to call more than once (only the first is sent)."""
        ...


class ProgressFactory(Protocol):
    """Makes the progress bar of one request (or a no-op one)."""

    async def begin(self, title: str, token: int | str | None) -> Progress:
        """Start a bar on ``token`` (or a server-created token when the client supports it)."""
        ...


Notify = Callable[[str, Any], None]
"""Send one notification (``method``, an attrs payload); never raises."""


def notifier(events: EventSink) -> Notify:
    """``events.notify`` with the payload as plain JSON; a failing sink is logged, never fatal."""

    def notify(method: str, payload: Any) -> None:
        try:
            events.notify(method, unstructure(payload))
        except Exception:
            log.exception("could not send %s", method)

    return notify

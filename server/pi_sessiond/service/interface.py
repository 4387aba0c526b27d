"""The seams between the services and the JSON-RPC layer.

The services never import pygls. They report to the client through an
:class:`EventSink` (notifications), ask it through a :class:`HookClient`
(server -> client requests, only for hooks it declared) and show progress
through a :class:`Progress` made by a :class:`ProgressFactory` per request.
The JSON-RPC layer implements these with pygls; tests can implement them
with plain objects.
"""

from __future__ import annotations

from typing import Any, Protocol


class ServiceError(Exception):
    """A request that failed for a reason the client should see.

    ``reason`` is the stable ``data.reason`` of PROTOCOL.md "Errors"; the
    handler layer maps it to the JSON-RPC code. ``data`` adds details (never
    secrets).
    """

    reason = "internal"

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class UnknownSession(ServiceError):
    reason = "unknownSession"


class UnknownEntry(ServiceError):
    reason = "unknownEntry"


class Locked(ServiceError):
    reason = "locked"


class NothingToCompact(ServiceError):
    reason = "nothingToCompact"


class SummarizerFailed(ServiceError):
    reason = "summarizerFailed"


class Conflict(ServiceError):
    reason = "conflict"


class Busy(ServiceError):
    reason = "busy"


class TooLarge(ServiceError):
    reason = "tooLarge"


class InvalidParams(ServiceError):
    """Params that parse but make no sense (``-32602``)."""

    reason = "invalidParams"


class Rejected(ServiceError):
    """A hook cancelled or a reviewer rejected: the request answers ``-32800``."""

    reason = "cancelled"


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
        ignore those (PROTOCOL.md: a failing hook never blocks the default path).
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

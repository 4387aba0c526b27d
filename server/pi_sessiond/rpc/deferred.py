"""The daemon of one connection, created right after the ``initialize`` reply instead of before it.

Importing the services (store, pipeline, summarizers, httpx) costs ~0.15 s, on
top of the ~0.3 s pygls needs for ``lsprotocol.types``; creating the daemon
later keeps start -> ``initialize`` reply near what pygls itself costs
(``bench/bench_rpc.py``). :class:`DaemonSlot` is not a proxy: it holds the
factory, records ``configure`` / ``update_configuration`` until the daemon
exists, and :meth:`DaemonSlot.get` creates it (once) — scheduled by the server
right after the ``initialize`` reply, or at the first request — and replays
them in order. ``initializationOptions`` are still checked for shape
(``-32602``) before the reply; an error the daemon raises while a recorded
call is replayed is logged and reported with ``window/logMessage``, and the
daemon keeps its other settings. Once the daemon exists, both calls go to it
directly and their errors reach the caller.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from pi_protocol.settings import InitializationOptions
from pi_sessiond.errors import PiError

logger = logging.getLogger(__name__)


class DaemonLifecycle(Protocol):
    """What the JSON-RPC layer calls on a daemon besides the table's service methods."""

    def configure(self, options: InitializationOptions) -> None: ...

    def update_configuration(self, settings: dict[str, Any]) -> None: ...

    def max_message_bytes(self) -> int:
        """``daemon.maxMessageBytes`` in force daemon-wide: what the framing enforces."""
        ...

    def max_batch_items(self) -> int:
        """``daemon.maxBatchItems`` in force daemon-wide: the items one batch may hold."""
        ...

    async def aclose(self) -> None: ...


D = TypeVar("D", bound=DaemonLifecycle)
Call = tuple[str, Callable[[DaemonLifecycle], None]]  # what a failure is called, the call


class DaemonSlot(Generic[D]):
    """Holds a connection's daemon: made by ``create`` at :meth:`get`, configured in order."""

    def __init__(self, create: Callable[[], D], on_error: Callable[[str], None]) -> None:
        self._create: Callable[[], D] | None = create
        self._on_error = on_error
        self._daemon: D | None = None
        self._pending: list[Call] = []

    @property
    def created(self) -> bool:
        return self._daemon is not None

    def get(self) -> D:
        """The daemon, created (once) on the first call, with the recorded configuration replayed."""
        if self._daemon is None:
            assert self._create is not None
            create, self._create = self._create, None
            self._daemon = create()
            pending, self._pending = self._pending, []
            for failure, call in pending:
                self._replay(failure, call)
        return self._daemon

    def configure(self, options: InitializationOptions) -> None:
        """``daemon.configure(options)`` now, or when the daemon is created."""
        self._apply("configure failed", lambda daemon: daemon.configure(options))

    def update_configuration(self, settings: dict[str, Any], applied: Callable[[], None] = lambda: None) -> None:
        """``daemon.update_configuration(settings)``, then ``applied()``: now, or when the daemon is created.
        A notification has no reply: a refusal (the settings in force stay) is logged and sent to the
        client's log, and ``applied`` is not called."""

        def call(daemon: DaemonLifecycle) -> None:
            daemon.update_configuration(settings)
            applied()

        failure = "workspace/didChangeConfiguration refused, the settings in force are unchanged"
        if self._daemon is None:
            self._pending.append((failure, call))
        else:
            self._replay(failure, call)

    async def aclose(self) -> None:
        """Close the daemon if it was ever created."""
        if self._daemon is not None:
            await self._daemon.aclose()

    def _apply(self, failure: str, call: Callable[[DaemonLifecycle], None]) -> None:
        if self._daemon is None:
            self._pending.append((failure, call))
        else:
            call(self._daemon)

    def _replay(self, failure: str, call: Callable[[DaemonLifecycle], None]) -> None:
        assert self._daemon is not None
        try:
            call(self._daemon)
        except Exception as exc:
            known = isinstance(exc, PiError)
            logger.error("%s: %s", failure, exc, exc_info=not known)
            self._on_error(f"pi-sessiond: {failure}: {exc if known else type(exc).__name__}")

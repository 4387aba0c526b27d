"""A Daemon created right after the ``initialize`` reply instead of before it.

Importing the services (store, engine, summarizers, httpx) costs ~0.15 s, on
top of the ~0.3 s pygls needs for ``lsprotocol.types``; deferring it keeps
start -> ``initialize`` reply near what pygls itself costs. The proxy records
``configure``/``update_configuration`` until the daemon exists, creates it on
:meth:`LazyDaemon.materialize` (scheduled by the server right after the
``initialize`` reply) or on the first attribute a handler touches, and then
replays them in order. ``initializationOptions`` are still checked for shape
(``-32602``) before the reply; an error the daemon raises while applying them
is logged and reported with ``window/logMessage``, and the daemon keeps its
other settings.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

logger = logging.getLogger(__name__)


class LazyDaemon:
    """Stands in for the Daemon until it is needed; then forwards every attribute."""

    def __init__(self, create: Callable[[], Any], on_error: Callable[[str], None]) -> None:
        self._create: Callable[[], Any] | None = create
        self._on_error = on_error
        self._daemon: Any = None
        self._calls: list[tuple[str, Any]] = []

    @property
    def materialized(self) -> bool:
        return self._daemon is not None

    def materialize(self) -> Any:
        """Create the daemon (once) and replay the recorded configuration."""
        if self._daemon is None:
            assert self._create is not None
            create, self._create = self._create, None
            self._daemon = create()
            calls, self._calls = self._calls, []
            for name, arg in calls:
                self._replay(name, arg)
        return self._daemon

    def _replay(self, name: str, arg: Any) -> None:
        try:
            getattr(self._daemon, name)(arg)
        except Exception as exc:
            logger.error("%s failed: %s", name, exc, exc_info=not hasattr(exc, "reason"))
            self._on_error(f"pi-sessiond: {name} failed: {getattr(exc, 'message', type(exc).__name__)}")

    def configure(self, options: Any) -> None:
        if self._daemon is None:
            self._calls.append(("configure", options))
        else:
            self._daemon.configure(options)

    def update_configuration(self, settings: dict[str, Any]) -> None:
        if self._daemon is None:
            self._calls.append(("update_configuration", settings))
        else:
            self._daemon.update_configuration(settings)

    async def aclose(self) -> None:
        if self._daemon is not None:
            await self._daemon.aclose()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.materialize(), name)

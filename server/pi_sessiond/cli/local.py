"""The daemon's service in-process: what every file subcommand drives.

The command line is not a second request path. Each subcommand opens its file
through the same :class:`~pi_sessiond.service.daemon.Daemon` the JSON-RPC
server uses and calls the same method the matching ``pi/*`` request calls
(``context`` ↔ ``pi/getContext``, ``stats`` ↔ ``pi/getStats``, ``compact`` ↔
``pi/compact``, ``navigate`` ↔ ``pi/navigateTree``, ``tree --json`` ↔
``pi/getEntries``), so the same file and settings give the same answer either
way. Command-line flags are the ``initialize`` settings layer (above the
global and project files, as an editor's settings are). Notifications go
nowhere and no hooks are declared; progress goes to stderr
(:mod:`pi_sessiond.cli.progress`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from pi_protocol.params import OpenSessionParams
from pi_protocol.results import SessionInfo
from pi_protocol.settings import InitializationOptions
from pi_sessiond.cli.common import CliError
from pi_sessiond.cli.progress import StderrProgress
from pi_sessiond.errors import InvalidParams
from pi_sessiond.service.daemon import Daemon
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.service.summarizing import SummarizerFactory
from pi_sessiond.summarizers.factory import make_summarizer


class _NoEvents:
    """Notifications have no client to go to."""

    def notify(self, method: str, payload: Any) -> None:
        return None


class _NoHooks:
    """The command line declares no hooks."""

    def declared(self, hook: str) -> bool:
        return False

    async def request(self, method: str, payload: Any, timeout: float | None) -> Any:  # pragma: no cover
        raise RuntimeError(f"no hooks are declared on the command line ({method})")


class LocalDaemon:
    """One in-process service with the command line's settings; :meth:`open` a file, then call it.

    Files are read whole (``daemon.tailOpenBytes: 0`` unless the settings say otherwise): a
    one-shot command has no client to tell the warnings of a file read later.
    """

    def __init__(self, settings: dict[str, Any] | None = None, progress: ProgressFactory | None = None,
                 summarizers: SummarizerFactory = make_summarizer) -> None:
        self.progress: ProgressFactory = progress or StderrProgress(quiet=True)
        self.service = Daemon(events=_NoEvents(), hooks=_NoHooks(), progress=progress, summarizer_factory=summarizers)
        settings = dict(settings or {})
        if isinstance(settings.get("daemon", {}), dict):  # whole files: every warning is printed at the open
            settings["daemon"] = {"tailOpenBytes": 0, **settings.get("daemon", {})}
        try:
            self.service.configure(InitializationOptions(settings=settings))
        except InvalidParams as exc:  # a flag's value the settings tree refuses
            raise CliError(str(exc), 2) from None

    def open(self, path: Path, *, in_blocks: bool = False) -> SessionInfo:
        """``pi/openSession`` of ``path``; the loader's warnings go to stderr with their line numbers.

        ``in_blocks``: for a command that only appends (a compaction): a v3 file is read a block at
        a time, each entry keeping its block until it is parsed (``store/detached.py``), so a
        compaction of the whole history never holds the file's bytes and its parsed entries together.
        """
        self.service.registry.in_blocks = in_blocks
        info = self.service.open_session(OpenSessionParams(path=str(path)))
        for warning in info.warnings:
            print(f"{path}:{warning.line}: warning: {warning.message}", file=sys.stderr)
        return info


@contextmanager
def local_daemon(settings: dict[str, Any] | None = None) -> Iterator[LocalDaemon]:
    """A :class:`LocalDaemon` for synchronous commands; its write locks are released at the end."""
    local = LocalDaemon(settings)
    try:
        yield local
    finally:
        asyncio.run(local.service.aclose())


@asynccontextmanager
async def running_daemon(settings: dict[str, Any] | None, progress: ProgressFactory,
                         summarizers: SummarizerFactory = make_summarizer) -> AsyncIterator[LocalDaemon]:
    """A :class:`LocalDaemon` for commands that wait for a summarizer; jobs are cancelled at the end."""
    local = LocalDaemon(settings, progress, summarizers)
    try:
        yield local
    finally:
        await local.service.aclose()


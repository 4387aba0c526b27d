"""pygls implementations of the service seams (:mod:`pi_sessiond.service.interface`).

* :class:`LspEventSink` — ``pi/*`` notifications, payload unstructured with
  :func:`pi_protocol.unstructure`; safe to call from a worker thread.
* :class:`LspHookClient` — hook requests, only for hooks the client declared
  in ``capabilities.experimental.pi.hooks``, each with a deadline.
* :class:`LspProgressFactory` — one per request: the client's
  ``workDoneToken`` if given, else a token made with
  ``window/workDoneProgress/create`` only when the client declared
  ``window.workDoneProgress`` (with a deadline), else a no-op bar. ``begin`` is
  ``cancellable: true`` and ``window/workDoneProgress/cancel`` on the token
  cancels the task that began the bar; ``end`` is sent once and frees the
  token, and the registration wrapper ends any bar left open.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from concurrent.futures import Future
from typing import Any, Protocol

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.progress import Progress as WorkDoneProgress

from pi_protocol import unstructure
from pi_sessiond.service.interface import Progress

logger = logging.getLogger(__name__)

CREATE_TOKEN_TIMEOUT = 5.0


class Notifier(Protocol):
    """The part of pygls' protocol a notification goes through."""

    def notify(self, method: str, params: Any = None) -> None: ...


class Peer(Protocol):
    """What the seams use of a connection's server (:class:`pi_sessiond.rpc.server.PiServer`)."""

    loop: asyncio.AbstractEventLoop | None
    loop_thread: int | None
    declared_hooks: frozenset[str]

    @property
    def protocol(self) -> Notifier: ...

    @property
    def work_done_progress(self) -> WorkDoneProgress: ...

    async def request(self, method: str, params: Any, timeout: float | None) -> Any: ...

    def supports_work_done_progress(self) -> bool: ...

    def new_token(self) -> str: ...


class LspEventSink:
    """Daemon -> client notifications."""

    def __init__(self, server: Peer) -> None:
        self._server = server

    def notify(self, method: str, payload: Any) -> None:
        params = unstructure(payload)
        loop = self._server.loop
        if loop is None or threading.get_ident() == self._server.loop_thread:
            self._server.protocol.notify(method, params)
        else:
            with contextlib.suppress(RuntimeError):  # the loop closed (the daemon is exiting): nobody to tell
                loop.call_soon_threadsafe(self._server.protocol.notify, method, params)


class LspHookClient:
    """Server -> client hook requests, sent only for the hooks a client declared at ``initialize``."""

    def __init__(self, server: Peer) -> None:
        self._server = server

    def declared(self, hook: str) -> bool:
        return hook in self._server.declared_hooks

    async def request(self, method: str, payload: Any, timeout: float | None) -> Any:
        return await self._server.request(method, unstructure(payload), timeout)


class NoProgress:
    """The bar of a client that shows none."""

    token: int | str | None = None

    def report(self, message: str, percentage: int | None = None) -> None:
        return None

    def end(self, message: str) -> None:
        return None


class LspProgress:
    """One ``$/progress`` bar on ``token``, linked to the task that began it."""

    def __init__(self, server: Peer, token: int | str, task: asyncio.Task[Any] | None) -> None:
        self.token = token
        self._progress = server.work_done_progress
        self._task = task
        self._ended = False
        self._cancel_future: Future[Any] = Future()
        if token in self._progress.tokens:
            logger.warning("progress token %r is already in use; the newer bar takes its cancel button", token)
        self._progress.tokens[token] = self._cancel_future
        self._cancel_future.add_done_callback(self._on_cancel)

    def _on_cancel(self, future: Future[Any]) -> None:
        if future.cancelled() and not self._ended and self._task is not None and not self._task.done():
            logger.info("progress %r cancelled by the client", self.token)
            self._task.cancel()

    def begin(self, title: str) -> None:
        value = types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0)
        self._progress.begin(self.token, value)

    def report(self, message: str, percentage: int | None = None) -> None:
        if not self._ended:
            value = types.WorkDoneProgressReport(message=message, percentage=percentage, cancellable=True)
            self._progress.report(self.token, value)

    @property
    def cancel_requested(self) -> bool:
        """Whether the client pressed cancel on this bar."""
        return self._cancel_future.cancelled()

    @property
    def ended(self) -> bool:
        return self._ended

    def end(self, message: str) -> None:
        if self._ended:
            return
        self.discard()
        self._progress.end(self.token, types.WorkDoneProgressEnd(message=message))

    def discard(self) -> None:
        """Forget the token without sending anything (the bar never began)."""
        self._ended = True
        if self._progress.tokens.get(self.token) is self._cancel_future:
            del self._progress.tokens[self.token]


class LspProgressFactory:
    """Makes the progress bars of one request."""

    def __init__(self, server: Peer, create_timeout: float = CREATE_TOKEN_TIMEOUT) -> None:
        self._server = server
        self._create_timeout = create_timeout
        self._bars: list[LspProgress] = []

    async def begin(self, title: str, token: int | str | None) -> Progress:
        if token is None:
            if not self._server.supports_work_done_progress():
                return NoProgress()
            token = self._server.new_token()
            # Registered before the create request: a client may press cancel as soon
            # as it has seen the token, before it answered the create.
            bar = self._bar(token)
            if not await self._create(token):
                bar.discard()
                return NoProgress()
            if bar.cancel_requested:
                # Python 3.11's wait_for can swallow a cancel that lands just as the
                # create answer arrives: honour the client's cancel here.
                bar.discard()
                raise asyncio.CancelledError()
        else:
            bar = self._bar(token)
        bar.begin(title)
        return bar

    def _bar(self, token: int | str) -> LspProgress:
        bar = LspProgress(self._server, token, asyncio.current_task())
        self._bars = [b for b in self._bars if not b.ended]  # a long-lived factory (auto-compaction) stays small
        self._bars.append(bar)
        return bar

    async def _create(self, token: str) -> bool:
        try:
            await self._server.request(
                types.WINDOW_WORK_DONE_PROGRESS_CREATE,
                types.WorkDoneProgressCreateParams(token=token),
                self._create_timeout,
            )
        except (TimeoutError, JsonRpcException) as exc:
            logger.warning("the client did not create a progress token (%s); no progress shown", exc)
            return False
        return True

    def close(self, message: str = "cancelled") -> None:
        """End every bar still open (the request failed or was cancelled before its ``end``)."""
        for bar in self._bars:
            bar.end(message)
        self._bars.clear()

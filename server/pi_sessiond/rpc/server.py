"""The server of one connection: :class:`PiServer`, a pygls ``LanguageServer``.

It owns pygls dispatch (through :class:`~pi_sessiond.rpc.protocol.PiProtocol`),
the service seams of :mod:`pi_sessiond.rpc.glue`, the connection's
:class:`~pi_sessiond.rpc.deferred.DaemonSlot` and the transport endpoint
(:class:`pi_sessiond.wire.transport.Endpoint`). ``pi_sessiond.app.make_server``
builds one and registers the method table on it.

Lifecycle (LSP): ``initialize`` structures ``initializationOptions`` into
:class:`pi_protocol.settings.InitializationOptions` (``-32602`` naming the field)
and passes them to ``daemon.configure``; ``capabilities.experimental.pi.hooks``
says which hooks the client answers; the reply has ``serverInfo`` and
``capabilities.experimental.pi`` (methods, hooks, limits). ``initialized`` and
``$/setTrace`` are accepted. ``workspace/didChangeConfiguration`` passes
``settings.pi`` to ``daemon.update_configuration``. ``shutdown`` cancels
in-flight requests (they answer ``-32800``) and later requests answer
``-32600``; ``exit`` ends the connection with code 0 after ``shutdown``, 1
otherwise. Requests before ``initialize`` are served (the daemon then runs on
its defaults), as pygls does; clients should still initialize first.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
from lsprotocol import types
from pygls.lsp.server import LanguageServer

from pi_protocol import StructureError, methods, structure, unstructure
from pi_protocol.settings import InitializationOptions
from pi_sessiond.rpc import codecache
from pi_sessiond.rpc.converter import raw_converter
from pi_sessiond.rpc.deferred import DaemonSlot
from pi_sessiond.rpc.errors import invalid_params, to_rpc_error
from pi_sessiond.rpc.glue import LspEventSink, LspHookClient, LspProgressFactory
from pi_sessiond.rpc.jsonrpc import MessageSink
from pi_sessiond.rpc.protocol import PiProtocol

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

SERVER_NAME = "pi-sessiond"
CLOSE_TIMEOUT = 5.0


def _version() -> str:
    """``pi_sessiond.__version__`` when the package defines it (importlib.metadata costs ~70 ms of start-up)."""
    import pi_sessiond

    version = getattr(pi_sessiond, "__version__", None)
    if isinstance(version, str):
        return version
    try:
        from importlib.metadata import version as dist_version

        return dist_version("pi-sessiond")
    except Exception:
        return "0.0.0"


class PiServer(LanguageServer):
    """One client's server: pygls dispatch, the daemon's glue, and the transport endpoint."""

    protocol: PiProtocol

    def __init__(self) -> None:
        super().__init__(SERVER_NAME, _version(), protocol_cls=PiProtocol, converter_factory=raw_converter)
        self._limit: int | None = None
        self._batch_items: int | None = None
        self.events = LspEventSink(self)
        self.hooks = LspHookClient(self)
        self.declared_hooks: frozenset[str] = frozenset()
        self.daemon: DaemonSlot[Any] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.configuration_log: list[tuple[str, Any]] = []
        self._ids = itertools.count(1)
        self.protocol.experimental_capabilities = self._experimental_capabilities
        self.protocol.batch_limits = lambda: (self.max_batch_items, self.max_message_bytes)
        for name, handler in (
            (types.INITIALIZE, self._on_initialize),
            (types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._on_did_change_configuration),
        ):
            self.feature(name)(_plain(handler))

    # ------------------------------------------------------ for the rpc layer

    def progress_factory(self) -> LspProgressFactory:
        """A fresh per-request progress factory (``server.method(..., progress=True)`` passes one)."""
        return LspProgressFactory(self)

    def supports_work_done_progress(self) -> bool:
        """Whether the client declared ``window.workDoneProgress`` at ``initialize``."""
        try:
            window = self.client_capabilities.window
        except AttributeError:
            return False
        return bool(window is not None and window.work_done_progress)

    async def request(self, method: str, params: Any, timeout: float | None) -> Any:
        """A server -> client request with a deadline; its bookkeeping is freed in every case.

        Raises ``TimeoutError`` or the client's error as a ``JsonRpcException``.
        """
        msg_id = f"pi-{next(self._ids)}"
        future = self.protocol.send_request(method, params, msg_id=msg_id)
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow a cancel that
            # lands just as the answer arrives, and a cancelled request must stay cancelled.
            async with asyncio.timeout(timeout):
                return await asyncio.wrap_future(future)
        finally:
            self.protocol._request_futures.pop(msg_id, None)
            self.protocol._result_types.pop(msg_id, None)

    def new_token(self) -> str:
        """A fresh server-side progress token."""
        return f"pi-progress-{next(self._ids)}"

    # -------------------------------------------------- transport endpoint

    @property
    def max_message_bytes(self) -> int:
        """The framing limit: ``daemon.maxMessageBytes`` of the daemon's settings once the daemon exists.

        Before that (and without a daemon): the same setting from the defaults, the
        global settings file and ``initializationOptions`` / the last configuration change.
        """
        slot = self.daemon
        if slot is not None and slot.created:
            return int(slot.get().max_message_bytes())
        if self._limit is None:
            self._apply_limits(None)
        assert self._limit is not None
        return self._limit

    @property
    def max_batch_items(self) -> int:
        """``daemon.maxBatchItems`` in force, from the same layers as :attr:`max_message_bytes`."""
        slot = self.daemon
        if slot is not None and slot.created:
            return int(slot.get().max_batch_items())
        if self._batch_items is None:
            self._apply_limits(None)
        assert self._batch_items is not None
        return self._batch_items

    @property
    def exit_code(self) -> int | None:
        return self.protocol.exit_code

    def attach(self, sink: MessageSink, stop: Callable[[], None]) -> None:
        self.protocol.sink = sink
        self.protocol.on_exit = stop
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()

    async def settle(self, grace: float) -> None:
        """End of input: the requests in flight get up to ``grace`` seconds to finish and answer."""
        pending = self.protocol.in_flight()
        if pending:
            await asyncio.wait(pending, timeout=grace)

    def busy(self) -> bool:
        """Whether a request or handler of this connection is still running."""
        return bool(self.protocol.in_flight())

    async def aclose(self) -> None:
        pending = self.protocol.in_flight()
        for future in pending:
            future.cancel()
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_TIMEOUT)
        if self.daemon is not None:
            try:
                await asyncio.wait_for(self.daemon.aclose(), CLOSE_TIMEOUT)
            except Exception:
                logger.exception("closing the daemon failed")
        self.protocol.progress.tokens.clear()

    def log_error(self, message: str) -> None:
        """A ``window/logMessage`` of type Error (shown in the client's log, not as a popup)."""
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Error, message=message))

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log; never a ``window/showMessage`` popup (headless clients)."""
        logger.warning("%s: %s", getattr(source, "__name__", source), error)

    # ----------------------------------------------------------- lifecycle

    def _experimental_capabilities(self) -> dict[str, Any]:
        features = self.protocol.fm.features
        return {
            "pi": {
                "methods": sorted(name for name in features if name.startswith("pi/")),
                "hooks": list(methods.HOOK_NAMES),
                "maxMessageBytes": self.max_message_bytes,
            }
        }

    def _on_initialize(self, params: types.InitializeParams) -> None:
        try:
            options = structure(_options_object(params.initialization_options), InitializationOptions)
        except StructureError as exc:
            raise invalid_params(exc, prefix="initializationOptions") from None
        options = attrs.evolve(options, secret=None)  # a listener checked it; nothing keeps it
        self.declared_hooks = _declared_hooks(params.capabilities.experimental)
        self._apply_limits(options.settings)
        self.configuration_log.append(("configure", unstructure(options)))
        if self.daemon is not None:
            try:
                self.daemon.configure(options)
            except Exception as exc:
                raise to_rpc_error(exc, "initialize") from None
            if not self.daemon.created and self.loop is not None:
                self.loop.call_soon(self._create_daemon)

    def _create_daemon(self) -> None:
        try:
            if self.daemon is not None:
                self.daemon.get()
        except Exception:
            logger.exception("creating the daemon failed")
        codecache.finish()  # the start is over: keep the code its classes compiled

    def _on_did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings.get("pi") if isinstance(params.settings, dict) else None
        if not isinstance(settings, dict):
            logger.info("workspace/didChangeConfiguration without settings.pi: ignored")
            return
        self.configuration_log.append(("update_configuration", settings))
        if self.daemon is None:
            self._apply_limits(settings)
        else:  # the framing limits change only with settings the daemon took
            self.daemon.update_configuration(settings, applied=lambda: self._apply_limits(settings))

    def _apply_limits(self, settings: dict[str, Any] | None) -> None:
        from pi_sessiond.settings import DEFAULT_LAYER, Layer, file_layer, global_path, resolve

        layers = [DEFAULT_LAYER, file_layer("global", global_path()), Layer("initialize", settings or {})]
        daemon = resolve(layers).settings.daemon
        self._limit, self._batch_items = daemon.max_message_bytes, daemon.max_batch_items


def _options_object(raw: Any) -> Any:
    """``initializationOptions`` as an object: absent, ``null`` and an empty array are "no options".

    Neovim (and other Lua clients) encode an empty table as ``[]``, so
    ``setup({})`` sends ``[]`` for the options, or for ``settings`` inside them.
    Anything else that is not an object is refused by the structuring, naming the field.
    """
    if raw is None or raw == []:
        return {}
    if isinstance(raw, dict) and raw.get("settings") == []:
        return {**raw, "settings": {}}
    return raw


def _plain(method: Callable[[Any], None]) -> Callable[[Any], None]:
    """A bound method as a plain function (pygls sets attributes on handlers)."""

    def handler(params: Any) -> None:
        method(params)

    return handler


def _declared_hooks(experimental: Any) -> frozenset[str]:
    pi = experimental.get("pi") if isinstance(experimental, dict) else None
    hooks = pi.get("hooks") if isinstance(pi, dict) else None
    if not isinstance(hooks, list):
        return frozenset()
    return frozenset(h for h in hooks if h in methods.HOOK_NAMES)

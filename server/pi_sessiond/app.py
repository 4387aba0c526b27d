"""The server factory: one :class:`PiServer` (pygls ``LanguageServer``) per connection.

``make_server()`` builds the server, its Daemon (``pi_sessiond.service.daemon``)
wired to the server's :class:`~pi_sessiond.rpc.glue.LspEventSink` and
:class:`~pi_sessiond.rpc.glue.LspHookClient`, and calls
``pi_sessiond.handlers.register(server, daemon)`` when that package exists.
There is no module-level server.

Lifecycle (LSP): ``initialize`` structures ``initializationOptions`` into
:class:`pi_protocol.params.InitializationOptions` (``-32602`` naming the field)
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
import importlib
import importlib.util
import inspect
import itertools
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from pi_protocol import StructureError, methods, structure, unstructure
from pi_protocol.params import InitializationOptions
from pi_sessiond.rpc.converter import raw_converter
from pi_sessiond.rpc.errors import invalid_params, to_rpc_error
from pi_sessiond.rpc.glue import LspEventSink, LspHookClient, LspProgressFactory
from pi_sessiond.rpc.lazy import LazyDaemon
from pi_sessiond.rpc.methods import register_method
from pi_sessiond.rpc.protocol import MessageSink, PiProtocol
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

SERVER_NAME = "pi-sessiond"
CLOSE_TIMEOUT = 5.0
DEBUG_METHODS_ENV = "PI_SESSIOND_DEBUG_METHODS"


class DaemonLifecycle(Protocol):
    """What the JSON-RPC layer itself calls on the Daemon (handlers call the rest)."""

    def configure(self, options: InitializationOptions) -> None: ...

    def update_configuration(self, settings: dict[str, Any]) -> None: ...

    def max_message_bytes(self) -> int:
        """``daemon.maxMessageBytes`` in force daemon-wide: what the framing enforces."""
        ...

    async def aclose(self) -> None: ...


DaemonFactory = Callable[[EventSink, HookClient, ProgressFactory], DaemonLifecycle]


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
        self.events = LspEventSink(self)
        self.hooks = LspHookClient(self)
        self.declared_hooks: frozenset[str] = frozenset()
        self.daemon: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread: int | None = None
        self.configuration_log: list[tuple[str, Any]] = []
        self._ids = itertools.count(1)
        self.protocol.experimental_capabilities = self._experimental_capabilities
        for name, handler in (
            (types.INITIALIZE, self._on_initialize),
            (types.WORKSPACE_DID_CHANGE_CONFIGURATION, self._on_did_change_configuration),
        ):
            self.feature(name)(_plain(handler))

    # ------------------------------------------------------- for handlers

    def method(self, name: str, params_cls: type[Any] | None = None, *, progress: bool = False) -> Callable[[F], F]:
        """Decorator: register a typed handler (see :mod:`pi_sessiond.rpc.methods`)."""

        def decorator(fn: F) -> F:
            register_method(self, name, params_cls, fn, progress=progress)
            return fn

        return decorator

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
        daemon = self.daemon
        if daemon is not None and getattr(daemon, "materialized", True):
            return int(daemon.max_message_bytes())
        if self._limit is None:
            self._apply_limits(None)
        assert self._limit is not None
        return self._limit

    @property
    def exit_code(self) -> int | None:
        return self.protocol.exit_code

    def attach(self, sink: MessageSink, stop: Callable[[], None]) -> None:
        self.protocol.sink = sink
        self.protocol.on_exit = stop
        self.loop = asyncio.get_running_loop()
        self.loop_thread = threading.get_ident()

    def receive(self, body: bytes) -> None:
        self.protocol.receive(body)

    def too_large(self, size: int, limit: int, msg_id: Any) -> None:
        self.protocol.too_large(size, limit, msg_id)

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
        raw = params.initialization_options
        try:
            options = structure({} if raw is None else raw, InitializationOptions)
        except StructureError as exc:
            raise invalid_params(exc, prefix="initializationOptions") from None
        self.declared_hooks = _declared_hooks(params.capabilities.experimental)
        self._apply_limits(options.settings)
        self.configuration_log.append(("configure", unstructure(options)))
        if self.daemon is not None:
            try:
                self.daemon.configure(options)
            except Exception as exc:
                raise to_rpc_error(exc, "initialize") from None
            if isinstance(self.daemon, LazyDaemon) and self.loop is not None:
                self.loop.call_soon(self._materialize)

    def _materialize(self) -> None:
        try:
            self.daemon.materialize()
        except Exception:
            logger.exception("creating the daemon failed")

    def _on_did_change_configuration(self, params: types.DidChangeConfigurationParams) -> None:
        settings = params.settings.get("pi") if isinstance(params.settings, dict) else None
        if not isinstance(settings, dict):
            logger.info("workspace/didChangeConfiguration without settings.pi: ignored")
            return
        self._apply_limits(settings)
        self.configuration_log.append(("update_configuration", settings))
        if self.daemon is not None:
            try:
                self.daemon.update_configuration(settings)
            except Exception:
                logger.exception("update_configuration failed")

    def _apply_limits(self, settings: dict[str, Any] | None) -> None:
        from pi_sessiond.settings import DEFAULT_LAYER, Layer, file_layer, global_path, resolve

        layers = [DEFAULT_LAYER, file_layer("global", global_path()), Layer("initialize", settings or {})]
        self._limit = resolve(layers).settings.daemon.max_message_bytes


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


def _optional_module(name: str) -> Any:
    """``name`` imported, or ``None`` when that module itself does not exist (yet)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def _default_daemon_factory(sessions_dir: str | None) -> DaemonFactory | None:
    if importlib.util.find_spec("pi_sessiond.service.daemon") is None:
        logger.warning("pi_sessiond.service.daemon is not available: serving without a daemon")
        return None

    def factory(events: EventSink, hooks: HookClient, progress: ProgressFactory) -> DaemonLifecycle:
        daemon_cls = importlib.import_module("pi_sessiond.service.daemon").Daemon
        extra: dict[str, Any] = {"progress": progress} if "progress" in inspect.signature(daemon_cls).parameters else {}
        path = Path(sessions_dir) if sessions_dir is not None else None
        daemon: DaemonLifecycle = daemon_cls(events=events, hooks=hooks, sessions_dir=path, **extra)
        return daemon

    return factory


def make_server(
    *,
    daemon_factory: DaemonFactory | None = None,
    sessions_dir: str | None = None,
    debug_methods: bool | None = None,
    defer_daemon: bool = True,
) -> PiServer:
    """A new server with its own Daemon and every handler registered.

    ``daemon_factory(events, hooks, progress)`` defaults to ``Daemon(events=…,
    hooks=…, sessions_dir=sessions_dir, progress=…)`` (``progress`` makes the
    bars of background auto-compactions). With ``defer_daemon`` (the
    default) the handlers get a :class:`~pi_sessiond.rpc.lazy.LazyDaemon`
    that creates the Daemon right after the ``initialize`` reply (or at the
    first use), which keeps the services' imports out of the start-up time. ``debug_methods`` (default: the
    ``PI_SESSIOND_DEBUG_METHODS=1`` environment variable) adds the ``debug/*``
    test methods of :mod:`pi_sessiond.rpc.debug`.
    """
    server = PiServer()
    factory = daemon_factory or _default_daemon_factory(sessions_dir)
    if factory is not None:
        make_daemon = factory

        def create() -> DaemonLifecycle:
            return make_daemon(server.events, server.hooks, server.progress_factory())

        server.daemon = LazyDaemon(create, server.log_error) if defer_daemon else create()
    handlers = _optional_module("pi_sessiond.handlers")
    if handlers is not None and server.daemon is not None:
        handlers.register(server, server.daemon)
    if debug_methods if debug_methods is not None else os.environ.get(DEBUG_METHODS_ENV) == "1":
        from pi_sessiond.rpc import debug

        debug.register(server)
    return server

"""The pygls protocol, hardened: framing, cancellation, shutdown and errors for a daemon.

:class:`PiProtocol` keeps pygls' dispatch, progress and server->client
machinery and changes what a long-running, headless daemon needs:

* input arrives as whole bodies from :mod:`pi_sessiond.wire.transport`
  (:meth:`PiProtocol.receive`): ``-32700`` for bad JSON or UTF-8, ``-32600``
  for anything that is not a JSON-RPC 2.0 message (with its id when it has a
  usable one), batches answered as one array, only the top level structured
  into pygls message classes, requests after ``shutdown`` answered ``-32600``;
* a plain ``def`` handler runs inline, and when it returns an awaitable (the
  method table's handlers do for ``async`` services) that runs as the
  request's task, cancellable like pygls' own ``async def`` handlers;
* output is orjson with a byte-accurate ``Content-Length`` (the sink frames it),
  one write per message, and a request always gets an answer, even when its
  result cannot be serialised;
* no leaks: futures of notification handlers and of the user handlers pygls
  chains behind its builtins are dropped when they finish;
* errors: no tracebacks to the client, no ``window/showMessage`` popups;
* ``exit`` records the LSP exit code (0 after ``shutdown``, 1 otherwise) and
  stops the connection instead of calling ``sys.exit`` inside the loop.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import orjson
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.feature_manager import is_thread_function
from pygls.protocol import (
    JsonRPCNotification,
    JsonRPCRequestMessage,
    JsonRPCResponseMessage,
    LanguageServerProtocol,
    lsp_method,
)

from pi_protocol import errors as codes
from pi_sessiond.jsonio.jsontext import loads
from pi_sessiond.rpc.encoding import Encoder, too_large_reply
from pi_sessiond.rpc.errors import reason_error, to_rpc_error
from pi_sessiond.rpc.jsonrpc import (
    Batch,
    Done,
    MessageSink,
    check_message,
    describe_structure_error,
    error_reply,
    max_in_flight,
    valid_id,
)
from pi_sessiond.rpc.lifecycle import DROP, Lifecycle

if TYPE_CHECKING:
    from concurrent.futures import Future

logger = logging.getLogger(__name__)



class PiProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with the daemon's framing, output and lifecycle rules."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self._encoder = Encoder(converter)
        self.sink: MessageSink | None = None
        self.exit_code: int | None = None
        self.on_exit: Callable[[], None] | None = None
        self.experimental_capabilities: Callable[[], dict[str, Any]] | None = None
        self._batches: dict[Any, Batch] = {}
        self._plain_handlers: dict[Any, bool] = {}
        self.max_in_flight = max_in_flight()
        self.lifecycle = Lifecycle(self._serves)
        #: ``(daemon.maxBatchItems, daemon.maxMessageBytes)`` in force; the server sets it.
        self.batch_limits: Callable[[], tuple[int, int]] = lambda: (1000, 64 * 1024 * 1024)

    # ----------------------------------------------------------------- input

    def receive(self, body: bytes) -> None:
        """Handle one message body (a JSON object or a batch array).

        A batch is counted before it is parsed where that is cheap: more
        ``"jsonrpc"`` members than ``daemon.maxBatchItems`` is refused without
        building the items (a batch bomb never costs its parsed size).
        """
        if body[:64].lstrip()[:1] == b"[" and self._refuse_batch(body.count(b'"jsonrpc"')):
            return
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            try:  # deeper than orjson reads (1024 levels), or a lone surrogate
                data = loads(body)
            except ValueError:
                self._emit(error_reply(None, codes.PARSE_ERROR, f"Parse error: {exc}"))
                return
        if not isinstance(data, list):
            self._receive_one(data, None)
            return
        if not data:
            self._emit(error_reply(None, codes.INVALID_REQUEST, "Invalid request: empty batch"))
            return
        if self._refuse_batch(len(data)):
            return
        reply_cap = self.batch_limits()[1]
        batch = Batch(self._write_body, self._encoder.encode, reply_cap, too_large_reply(reply_cap))
        for item in data:
            self._receive_one(item, batch)
        batch.seal()

    def _refuse_batch(self, count: int) -> bool:
        """Answer one ``tooLarge`` (nothing run) when ``count`` items pass ``daemon.maxBatchItems``."""
        items = self.batch_limits()[0]
        if count <= items:
            return False
        message = f"Batch too large: {count} items (daemon.maxBatchItems is {items}); nothing was run"
        error = reason_error("tooLarge", message, {"items": count, "limit": items})
        self._emit(error_reply(None, error.code, error.message, error.data))
        return True

    def too_large(self, size: int, limit: int, msg_id: Any) -> None:
        """Answer a message that was skipped for exceeding ``daemon.maxMessageBytes``."""
        message = f"Message too large: {size} bytes (daemon.maxMessageBytes is {limit})"
        error = reason_error("tooLarge", message, {"size": size, "limit": limit})
        self._emit(error_reply(msg_id if valid_id(msg_id) else None, error.code, error.message, error.data))

    def broken_frame(self, problem: str) -> None:
        """Answer a frame that cannot be parsed (``id: null``): the connection's last message."""
        self._emit(error_reply(None, codes.PARSE_ERROR, f"Parse error: {problem}; closing the connection"))

    def _reject(self, msg_id: Any, message: str, batch: Batch | None) -> None:
        reply = error_reply(msg_id, codes.INVALID_REQUEST, f"Invalid request: {message}")
        if batch is not None:
            batch.add(reply)
        else:
            self._emit(reply)

    def _receive_one(self, item: Any, batch: Batch | None) -> None:
        problem, msg_id = check_message(item)
        if problem:
            self._reject(msg_id, problem, batch)
            return
        is_request = "method" in item and "id" in item
        if is_request and self._shutdown and item["method"] != types.EXIT:
            self._reject(msg_id, "the server is shutting down", batch)
            return
        verdict = self.lifecycle.verdict(item["method"], msg_id, is_request) if "method" in item else None
        if verdict is not None:
            if verdict is not DROP:
                assert isinstance(verdict, JsonRpcException)
                self._reply(error_reply(msg_id, verdict.code, verdict.message, verdict.data), batch)
            return
        try:
            message = self.structure_message(item)
        except JsonRpcException as exc:
            if is_request:
                self._reply(error_reply(msg_id, exc.code, exc.message, exc.data), batch)
            else:
                logger.warning("dropped a malformed %r message: %s", item.get("method"), exc.message)
            return
        if is_request and batch is not None:
            batch.expect()
            self._batches[msg_id] = batch
        self.handle_message(message)

    def _reply(self, reply: dict[str, Any], batch: Batch | None) -> None:
        self.lifecycle.answered(reply)
        batch.add(reply) if batch is not None else self._emit(reply)

    def _serves(self, method: str) -> bool:
        return method in self.fm.builtin_features or method in self.fm.features or method == types.CANCEL_REQUEST

    def structure_message(self, data: dict[str, Any]) -> Any:
        """The top level only; lsprotocol types for LSP methods, generic classes otherwise."""
        method = data.get("method")
        cls: Any
        if method is None:
            if "error" in data:
                cls = types.ResponseErrorMessage
            else:
                cls = self._result_types.pop(data["id"], None) or JsonRPCResponseMessage
        elif "id" in data:
            cls = self.get_message_type(method) or JsonRPCRequestMessage
        else:
            cls = self.get_message_type(method) or JsonRPCNotification
        try:
            return self._converter.structure(data, cls)
        except Exception as exc:
            raise reason_error("invalidParams", f"Invalid params: {describe_structure_error(exc)}") from None

    def handle_message(self, message: Any) -> None:
        """pygls' dispatch without its ``runtime_checkable`` Protocol checks (a third of its cost).

        :meth:`receive` has already checked ``jsonrpc``, ``method`` and ``id``,
        so the message kind is read from the structured object's attributes.
        """
        method = getattr(message, "method", None)
        if self._shutdown and method != types.EXIT:
            logger.debug("ignored %r after shutdown", method)
            return
        ctx = contextvars.copy_context()
        if method is not None:
            if hasattr(message, "id"):
                if len(self._request_futures) >= self.max_in_flight:
                    # A bounded queue: a clear ``busy`` instead of unbounded memory.
                    busy = reason_error("busy", "Too many requests in flight", {"inFlight": len(self._request_futures)})
                    self._emit(error_reply(message.id, busy.code, busy.message, busy.data))
                    return
                ctx.run(self._handle_request, message.id, method, message.params)
            else:
                ctx.run(self._handle_notification, method, message.params)
        elif getattr(message, "error", None) is not None:
            ctx.run(self._handle_response, message.id, None, message.error)
        else:
            ctx.run(self._handle_response, message.id, message.result)

    # ---------------------------------------------------------------- output

    def _send_data(self, data: Any) -> None:
        try:
            obj = self._message_dict(data)
        except Exception:
            logger.exception("cannot encode an outgoing %s", type(data).__name__)
            return
        self._emit(obj)

    def _emit(self, obj: dict[str, Any]) -> None:
        if not self.lifecycle.ready:
            self.lifecycle.answered(obj)
        if "method" not in obj and self._batches:
            batch = self._batches.pop(obj.get("id"), None)
            if batch is not None:
                batch.answered(obj)
                return
        self._write(obj)

    def _write(self, obj: Any) -> None:
        body = self._encoder.encode(obj)
        if body is not None:
            self._write_body(body)

    def _write_body(self, body: bytes) -> None:
        sink = self.sink
        if sink is None or sink.closed:
            logger.debug("connection closed; dropped an outgoing message")
            return
        sink.send(body)

    def _message_dict(self, data: Any) -> dict[str, Any]:
        kind = type(data)
        if kind is JsonRPCResponseMessage:
            return {"jsonrpc": "2.0", "id": data.id, "result": data.result}
        if kind is types.ResponseErrorMessage:
            error = data.error
            return error_reply(data.id, error.code, error.message, error.data)
        if kind is JsonRPCNotification or kind is JsonRPCRequestMessage:
            obj: dict[str, Any] = {"jsonrpc": "2.0"}
            if kind is JsonRPCRequestMessage:
                obj["id"] = data.id
            obj["method"] = data.method
            if data.params is not None:
                obj["params"] = data.params
            return obj
        if isinstance(data, dict):
            return data
        result: dict[str, Any] = self._converter.unstructure(data)
        return result

    # -------------------------------------------------------------- handlers

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """pygls' executor, but a finished handler's future leaves ``_request_futures``.

        Plain ``def`` handlers run inline with a lightweight completed future
        (pygls builds a ``concurrent.futures.Future`` with its locks for each);
        an awaitable they return becomes the request's task.
        """

        def finished(future: Future[Any]) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        if not self._is_plain(handler):
            super()._execute_handler(msg_id, handler, finished, args, kwargs)
            return
        try:
            value = handler(*(args or ()), **(kwargs or {}))
        except Exception as exc:
            callback(Done(None, exc))
            return
        if inspect.isawaitable(value):
            task: Any = asyncio.ensure_future(value)  # pygls keeps asyncio and concurrent futures in one table
            self._request_futures[msg_id] = task
            task.add_done_callback(finished)
            return
        callback(Done(value, None))

    def _is_plain(self, handler: Any) -> bool:
        plain = self._plain_handlers.get(handler)
        if plain is None:
            plain = not (
                inspect.iscoroutinefunction(handler)
                or inspect.isgeneratorfunction(handler)
                or is_thread_function(handler)  # type: ignore[no-untyped-call]
            )
            self._plain_handlers[handler] = plain
        return plain

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        self._request_futures.pop(msg_id, None)
        if future.cancelled():
            self._emit(error_reply(msg_id, codes.REQUEST_CANCELLED, f"Request {msg_id!r} was cancelled"))
            return
        exc = future.exception()
        if exc is None:
            self._send_response(msg_id, result=future.result())
            return
        if not isinstance(exc, Exception):
            exc = RuntimeError(type(exc).__name__)
        error = to_rpc_error(exc, f"request {msg_id!r}")
        self._emit(error_reply(msg_id, error.code, error.message, error.data))

    def _check_handler_result(self, future: Future[Any]) -> None:
        if future.cancelled() or (exc := future.exception()) is None:
            return
        if isinstance(exc, JsonRpcException):  # a client's bad notification: one line, no traceback
            logger.warning("a notification was refused: %s", exc.message)
        else:
            logger.error("a notification handler failed", exc_info=exc)

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        future = self._request_futures.pop(msg_id, None)
        if future is not None:
            future.cancel()

    # ------------------------------------------------------------- lifecycle

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Generator[Any, Any, types.InitializeResult]:
        result: types.InitializeResult = yield from super().lsp_initialize(params)
        if self.experimental_capabilities is not None:
            result.capabilities.experimental = self.experimental_capabilities()
        return result

    @lsp_method(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def lsp_work_done_progress_cancel(self, params: Any) -> None:
        """Cancel the bar's task; a token that is not a string or integer is refused with one log line."""
        token = getattr(params, "token", None)
        if not isinstance(token, str | int) or isinstance(token, bool):
            logger.warning("window/workDoneProgress/cancel: the token must be a string or an integer")
            return
        future = self.progress.tokens.get(token)
        if future is None:
            logger.info("window/workDoneProgress/cancel for an unknown token %r", token)
        else:
            future.cancel()

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> None:  # type: ignore[override]  # a plain handler, not pygls' generator
        """Record the exit code; the transport stops reading and the process exits with it."""
        self.exit_code = 0 if self._shutdown else 1
        if self.on_exit is not None:
            self.on_exit()

    def in_flight(self) -> list[asyncio.Future[Any]]:
        """The asyncio futures of requests and handlers that are still running."""
        running: list[asyncio.Future[Any]] = []
        for future in list(self._request_futures.values()):
            if isinstance(future, asyncio.Future) and not future.done():
                running.append(future)
        return running

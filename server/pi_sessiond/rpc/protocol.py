"""The pygls protocol, hardened (lsp-pygls.md §1.5, §1.9, §1.10, §8).

:class:`PiProtocol` keeps pygls' dispatch, progress and server->client
machinery and changes what a long-running, headless daemon needs:

* input arrives as whole bodies from :mod:`pi_sessiond.transport`
  (:meth:`PiProtocol.receive`): ``-32700`` for bad JSON or UTF-8, ``-32600``
  for anything that is not a JSON-RPC 2.0 message (with its id when it has a
  usable one), batches answered as one array, only the top level structured
  into pygls message classes, requests after ``shutdown`` answered ``-32600``;
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
import os
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Protocol

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
from pi_sessiond.rpc.errors import reason_error, to_rpc_error

if TYPE_CHECKING:
    from concurrent.futures import Future

logger = logging.getLogger(__name__)

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


class MessageSink(Protocol):
    """Where encoded messages go; the transport adds the framing."""

    @property
    def closed(self) -> bool: ...

    def send(self, body: bytes) -> None:
        """Queue one whole message (never blocks; backpressure is the reader's job)."""
        ...


def _valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


DEFAULT_MAX_IN_FLIGHT = 4096


def max_in_flight() -> int:
    """Requests that may run at once (``PI_SESSIOND_MAX_IN_FLIGHT`` overrides, for tests)."""
    try:
        return max(1, int(os.environ.get("PI_SESSIOND_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT)))
    except ValueError:
        return DEFAULT_MAX_IN_FLIGHT


def error_reply(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object (``id`` kept even when null)."""
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


class _Batch:
    """Collects the replies of one batch and writes them as one array."""

    def __init__(self, write: Callable[[Any], None]) -> None:
        self._write = write
        self._replies: list[dict[str, Any]] = []
        self._pending = 0
        self._sealed = False

    def expect(self) -> None:
        self._pending += 1

    def answered(self, reply: dict[str, Any]) -> None:
        self._pending -= 1
        self.add(reply)

    def add(self, reply: dict[str, Any]) -> None:
        self._replies.append(reply)
        self._flush()

    def seal(self) -> None:
        self._sealed = True
        self._flush()

    def _flush(self) -> None:
        if self._sealed and self._pending == 0 and self._replies:
            replies, self._replies = self._replies, []
            self._write(replies)


class _Done:
    """A completed future for a handler that ran inline."""

    __slots__ = ("_exc", "_result")

    def __init__(self, result: Any, exc: Exception | None) -> None:
        self._result = result
        self._exc = exc

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return True

    def exception(self) -> Exception | None:
        return self._exc

    def result(self) -> Any:
        if self._exc is not None:
            raise self._exc
        return self._result


class PiProtocol(LanguageServerProtocol):
    """pygls' LSP protocol with the daemon's framing, output and lifecycle rules."""

    def __init__(self, server: Any, converter: Any) -> None:
        super().__init__(server, converter)
        self.sink: MessageSink | None = None
        self.exit_code: int | None = None
        self.on_exit: Callable[[], None] | None = None
        self.experimental_capabilities: Callable[[], dict[str, Any]] | None = None
        self._batches: dict[Any, _Batch] = {}
        self._plain_handlers: dict[Any, bool] = {}
        self.max_in_flight = max_in_flight()

    # ----------------------------------------------------------------- input

    def receive(self, body: bytes) -> None:
        """Handle one message body (a JSON object or a batch array)."""
        try:
            data = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            self._emit(error_reply(None, codes.PARSE_ERROR, f"Parse error: {exc}"))
            return
        if not isinstance(data, list):
            self._receive_one(data, None)
            return
        if not data:
            self._emit(error_reply(None, codes.INVALID_REQUEST, "Invalid request: empty batch"))
            return
        batch = _Batch(self._write)
        for item in data:
            self._receive_one(item, batch)
        batch.seal()

    def too_large(self, size: int, limit: int, msg_id: Any) -> None:
        """Answer a message that was skipped for exceeding ``daemon.maxMessageBytes``."""
        message = f"Message too large: {size} bytes (daemon.maxMessageBytes is {limit})"
        error = reason_error("tooLarge", message, {"size": size, "limit": limit})
        self._emit(error_reply(msg_id if _valid_id(msg_id) else None, error.code, error.message, error.data))

    def _reject(self, msg_id: Any, message: str, batch: _Batch | None) -> None:
        reply = error_reply(msg_id, codes.INVALID_REQUEST, f"Invalid request: {message}")
        if batch is not None:
            batch.add(reply)
        else:
            self._emit(reply)

    def _receive_one(self, item: Any, batch: _Batch | None) -> None:
        problem, msg_id = _check_message(item)
        if problem:
            self._reject(msg_id, problem, batch)
            return
        is_request = "method" in item and "id" in item
        if is_request and self._shutdown and item["method"] != types.EXIT:
            self._reject(msg_id, "the server is shutting down", batch)
            return
        try:
            message = self.structure_message(item)
        except JsonRpcException as exc:
            if is_request:
                reply = error_reply(msg_id, exc.code, exc.message, exc.data)
                batch.add(reply) if batch is not None else self._emit(reply)
            else:
                logger.warning("dropped a malformed %r message: %s", item.get("method"), exc.message)
            return
        if is_request and batch is not None:
            batch.expect()
            self._batches[msg_id] = batch
        self.handle_message(message)

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
            raise reason_error("invalidParams", f"Invalid params: {_describe_structure_error(exc)}") from None

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
        if "method" not in obj and self._batches:
            batch = self._batches.pop(obj.get("id"), None)
            if batch is not None:
                batch.answered(obj)
                return
        self._write(obj)

    def _write(self, obj: Any) -> None:
        sink = self.sink
        if sink is None or sink.closed:
            logger.debug("connection closed; dropped an outgoing message")
            return
        try:
            body = orjson.dumps(obj, default=self._default, option=_JSON_OPTIONS)
        except TypeError as exc:
            if not isinstance(obj, dict) or "method" in obj or "id" not in obj:
                logger.error("cannot serialise an outgoing message: %s", exc)
                return
            logger.error("cannot serialise the result of request %r: %s", obj["id"], exc)
            body = orjson.dumps(error_reply(obj["id"], codes.INTERNAL_ERROR, "Internal error: unserialisable result"))
        sink.send(body)

    def _default(self, value: Any) -> Any:
        if hasattr(value, "__attrs_attrs__"):
            if type(value).__module__.startswith("pi_protocol"):
                from pi_protocol import unstructure

                return unstructure(value)
            return self._converter.unstructure(value)
        if isinstance(value, tuple | set | frozenset):
            return list(value)
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")

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
        (pygls builds a ``concurrent.futures.Future`` with its locks for each).
        """
        if self._is_plain(handler):
            try:
                done = _Done(handler(*(args or ()), **(kwargs or {})), None)
            except Exception as exc:
                done = _Done(None, exc)
            callback(done)
            return

        def finished(future: Future[Any]) -> None:
            if self._request_futures.get(msg_id) is future:
                del self._request_futures[msg_id]
            callback(future)

        super()._execute_handler(msg_id, handler, finished, args, kwargs)

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


def _check_message(item: Any) -> tuple[str, Any]:
    """``("", id)`` for a well-formed JSON-RPC 2.0 message, else the problem and the id to answer with."""
    if not isinstance(item, dict):
        return "expected a JSON object", None
    msg_id = item.get("id")
    if not _valid_id(msg_id):
        return "id must be a string, an integer or null", None
    if item.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"', msg_id
    if "method" in item:
        if not isinstance(item["method"], str):
            return "method must be a string", msg_id
        params = item.get("params")
        if params is not None and not isinstance(params, dict | list):
            return "params must be an object or an array", msg_id
        return "", msg_id
    if "id" not in item or ("result" not in item and "error" not in item):
        return "not a request, a notification or a response", msg_id
    return "", msg_id


def _describe_structure_error(exc: Exception) -> str:
    from cattrs.errors import BaseValidationError

    if isinstance(exc, BaseValidationError):
        from cattrs import transform_error

        return "; ".join(transform_error(exc, path="params"))
    return str(exc) or type(exc).__name__

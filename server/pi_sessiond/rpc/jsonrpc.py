"""JSON-RPC 2.0 message shapes: validity checks, error replies, batches.

What :class:`~pi_sessiond.rpc.protocol.PiProtocol` needs to answer any input
without pygls: :func:`check_message` says what is wrong with a message (and
which id to answer with), :func:`error_reply` builds the error object,
:class:`Batch` collects the replies of a batch into one array and
:class:`Done` is the completed future of a handler that ran inline.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Protocol

from pi_sessiond.rpc.errors import with_reason


class MessageSink(Protocol):
    """Where encoded messages go; the transport adds the framing."""

    @property
    def closed(self) -> bool: ...

    def send(self, body: bytes) -> None:
        """Queue one whole message (never blocks; backpressure is the reader's job)."""
        ...


def valid_id(value: Any) -> bool:
    return value is None or isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


DEFAULT_MAX_IN_FLIGHT = 4096


def max_in_flight() -> int:
    """Requests that may run at once (``PI_SESSIOND_MAX_IN_FLIGHT`` overrides, for tests)."""
    try:
        return max(1, int(os.environ.get("PI_SESSIOND_MAX_IN_FLIGHT", DEFAULT_MAX_IN_FLIGHT)))
    except ValueError:
        return DEFAULT_MAX_IN_FLIGHT


def error_reply(msg_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    """A JSON-RPC error response object (``id`` kept even when null); ``data.reason`` is always there."""
    error = {"code": code, "message": message, "data": with_reason(code, data)}
    return {"jsonrpc": "2.0", "id": msg_id, "error": error}


class Batch:
    """Collects the replies of one batch and writes them as one array, under a size cap.

    Each reply is encoded when it arrives (``encode``); once the replies held
    would pass ``cap`` bytes, each later reply is replaced by a ``tooLarge``
    error for its id (``too_large(id)``, already encoded), so a batch holds at
    most ``cap`` bytes plus one small error per item.
    """

    def __init__(self, write: Callable[[bytes], None], encode: Callable[[Any], bytes | None], cap: int,
                 too_large: Callable[[Any], bytes]) -> None:
        self._write = write
        self._encode = encode
        self._cap = cap
        self._too_large = too_large
        self._parts: list[bytes] = []
        self._size = 0
        self._pending = 0
        self._sealed = False

    def expect(self) -> None:
        self._pending += 1

    def answered(self, reply: dict[str, Any]) -> None:
        self._pending -= 1
        self.add(reply)

    def add(self, reply: dict[str, Any]) -> None:
        body = self._encode(reply)
        if body is None:
            return
        if self._size + len(body) > self._cap:
            body = self._too_large(reply.get("id"))
        self._parts.append(body)
        self._size += len(body)
        self._flush()

    def seal(self) -> None:
        self._sealed = True
        self._flush()

    def _flush(self) -> None:
        if self._sealed and self._pending == 0 and self._parts:
            parts, self._parts = self._parts, []
            self._write(b"[" + b",".join(parts) + b"]")


class Done:
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



def check_message(item: Any) -> tuple[str, Any]:
    """``("", id)`` for a well-formed JSON-RPC 2.0 message, else the problem and the id to answer with."""
    if not isinstance(item, dict):
        return "expected a JSON object", None
    msg_id = item.get("id")
    if not valid_id(msg_id):
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


def describe_structure_error(exc: Exception) -> str:
    from cattrs.errors import BaseValidationError

    if isinstance(exc, BaseValidationError):
        from cattrs import transform_error

        return "; ".join(transform_error(exc, path="params"))
    return str(exc) or type(exc).__name__

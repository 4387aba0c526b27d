"""Outgoing JSON-RPC messages as bytes: orjson, pygls' and our wire classes, any depth.

A result that cannot be serialised becomes its request's ``-32603`` error (the
request is still answered); any other message that cannot be is dropped and
logged. Values nested deeper than orjson writes (255) take the iterative writer.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import orjson

from pi_protocol import errors as codes
from pi_sessiond.jsonio.deepjson import deep_dumps
from pi_sessiond.rpc.errors import reason_error
from pi_sessiond.rpc.jsonrpc import error_reply

logger = logging.getLogger(__name__)

_JSON_OPTIONS = orjson.OPT_NON_STR_KEYS


class Encoder:
    """Encodes with the connection's converter (pygls' lsprotocol types) and ``pi_protocol``'s."""

    def __init__(self, converter: Any) -> None:
        self._converter = converter

    def encode(self, obj: Any) -> bytes | None:
        """``obj`` as JSON; a result that cannot be serialised becomes its request's error (``None``: dropped)."""
        try:
            return self.dumps(obj)
        except TypeError as exc:
            if not isinstance(obj, dict) or "method" in obj or "id" not in obj:
                logger.error("cannot serialise an outgoing message: %s", exc)
                return None
            logger.error("cannot serialise the result of request %r: %s", obj["id"], exc)
            return orjson.dumps(error_reply(obj["id"], codes.INTERNAL_ERROR, "Internal error: unserialisable result"))

    def dumps(self, obj: Any) -> bytes:
        """orjson; values nested deeper than orjson writes (255) take the iterative writer."""
        try:
            return orjson.dumps(obj, default=self._default, option=_JSON_OPTIONS)
        except TypeError:
            return deep_dumps(obj, default=self._default).encode("utf-8")

    def _default(self, value: Any) -> Any:
        if hasattr(value, "__attrs_attrs__"):
            if type(value).__module__.startswith("pi_protocol"):
                from pi_protocol import unstructure

                return unstructure(value)
            return self._converter.unstructure(value)
        if isinstance(value, tuple | set | frozenset):
            return list(value)
        raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def too_large_reply(cap: int) -> Callable[[Any], bytes]:
    """The reply to a batch whose replies would pass ``cap`` bytes (``tooLarge``)."""

    def reply(msg_id: Any) -> bytes:
        message = f"Reply too large: the batch's replies would pass {cap} bytes (daemon.maxMessageBytes)"
        error = reason_error("tooLarge", message, {"limit": cap})
        return orjson.dumps(error_reply(msg_id, error.code, error.message, error.data))

    return reply

"""Which messages a connection takes before, during and after ``initialize``.

* Before ``initialize`` has been answered with a result, a request is answered
  ``-32002 notInitialized`` and a notification is dropped (``exit`` excepted).
* ``initialize`` is taken once: a second one, while the first runs or after it
  succeeded, is ``-32600 invalidRequest``; after a failed one the client may try again.
* A request for a method nobody serves is ``-32601 methodNotFound`` and an
  unknown notification is dropped, neither logged: the client has its answer or needs none.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from pi_sessiond.rpc.errors import reason_error

logger = logging.getLogger(__name__)

DROP: Final = "drop"
"""The verdict for a notification that is ignored without a word."""

_ANYTIME: Final = frozenset({types.EXIT, types.CANCEL_REQUEST})


class Lifecycle:
    """One connection's ``initialize`` state and its refusals."""

    def __init__(self, serves: Callable[[str], bool]) -> None:
        self._serves = serves
        self._ready = False
        self._pending: Any = _NONE

    @property
    def ready(self) -> bool:
        """Whether ``initialize`` has been answered with a result."""
        return self._ready

    def verdict(self, method: str, msg_id: Any, is_request: bool) -> JsonRpcException | str | None:
        """``None`` to dispatch the message, :data:`DROP` to ignore it, or the error to answer it with."""
        if method == types.INITIALIZE and is_request:
            if self._ready or self._pending is not _NONE:
                return reason_error("invalidRequest", "Invalid request: initialize was already sent")
            self._pending = msg_id
            return None
        if not self._ready and method not in _ANYTIME:
            if not is_request:
                logger.debug("dropped %r: it came before initialize", method)
                return DROP
            return reason_error("notInitialized", f"Server not initialized: send initialize before {method}")
        if not self._serves(method):
            if not is_request:
                logger.debug("dropped a notification for an unknown method %r", method)
                return DROP
            return reason_error("methodNotFound", f"Method not found: {method}", {"method": method})
        return None

    def answered(self, reply: dict[str, Any]) -> None:
        """Note the answer to ``initialize`` (a result makes the connection ready)."""
        if self._pending is _NONE or reply.get("id") != self._pending or "method" in reply:
            return
        self._pending = _NONE
        self._ready = "result" in reply


_NONE: Final = object()

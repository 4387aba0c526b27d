"""Exceptions -> JSON-RPC errors, at the handler boundary only (STYLE.md habit 6).

Service errors keep their stable ``data.reason``; structure errors name the
field; anything unexpected is logged here with its traceback and reaches the
client as a short ``-32603`` without one.
"""

from __future__ import annotations

import logging

from pygls.exceptions import JsonRpcException

from pi_protocol import errors as codes
from pi_protocol.converter import StructureError
from pi_sessiond.service.interface import ServiceError

logger = logging.getLogger(__name__)

_EXTRA_CODES = {"invalidParams": codes.INVALID_PARAMS, "cancelled": codes.REQUEST_CANCELLED}


def invalid_params(exc: StructureError, *, prefix: str = "") -> JsonRpcException:
    """``-32602`` naming the field: ``data = {"reason": "invalidParams", "field": "a.b"}``."""
    field = ".".join(str(p) for p in ([prefix] if prefix else []) + list(exc.path))
    message = f"Invalid params: {prefix + '.' if prefix else ''}{exc}"
    return JsonRpcException(
        message=message, code=codes.INVALID_PARAMS, data={"reason": "invalidParams", "field": field}
    )


def service_error(exc: ServiceError) -> JsonRpcException:
    """The code for ``exc.reason`` (PROTOCOL.md "Errors"), ``data = {"reason": …, **exc.data}``."""
    code = _EXTRA_CODES.get(exc.reason) or codes.REASON_CODES.get(exc.reason, codes.INTERNAL_ERROR)
    return JsonRpcException(message=exc.message, code=code, data={"reason": exc.reason, **exc.data})


def internal_error(exc: BaseException, where: str) -> JsonRpcException:
    """Log ``exc`` with its traceback; the client gets ``-32603`` and the exception type only."""
    logger.error("unexpected error in %s", where, exc_info=exc)
    return JsonRpcException(
        message=f"Internal error: {type(exc).__name__}", code=codes.INTERNAL_ERROR, data={"reason": "internal"}
    )


def to_rpc_error(exc: Exception, where: str) -> JsonRpcException:
    """Map any exception raised by a handler to the error sent to the client."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, ServiceError):
        return service_error(exc)
    if isinstance(exc, StructureError):
        return invalid_params(exc)
    return internal_error(exc, where)

"""Exceptions -> JSON-RPC errors: the one place where a reason becomes a code.

A :class:`~pi_sessiond.errors.PiError` answers the code of its ``reason`` in
``pi_protocol.errors.REASONS`` with ``data = {"reason": …, **exc.data}``;
structure errors name the field; anything else is logged here with its
traceback and reaches the client as a short ``-32603`` without one.
``asyncio.CancelledError`` is a ``BaseException`` and never passes through
here: the rpc layer answers a cancelled request ``-32800`` itself, and
:func:`with_reason` gives that answer (and every other bare code) its ``data.reason``.
"""

from __future__ import annotations

import logging
from typing import Any

from pygls.exceptions import JsonRpcException

from pi_protocol import errors as codes
from pi_protocol.converter import StructureError
from pi_sessiond.errors import PiError

logger = logging.getLogger(__name__)


def with_reason(code: int, data: Any) -> dict[str, Any]:
    """``data`` for an error of ``code``: with its ``reason`` (the code's, unless ``data`` names one).

    ``data`` that is not an object (pygls puts a traceback there) is replaced by ``{"reason": …}``.
    """
    if not isinstance(data, dict):
        return {"reason": reason_of(code)}
    return data if "reason" in data else {"reason": reason_of(code), **data}


def reason_of(code: int) -> str:
    """The reason a bare ``code`` stands for (the first of the table's reasons with it, else ``internal``)."""
    return next((reason for reason, row in codes.REASONS.items() if row.code == code), "internal")


def invalid_params(exc: StructureError, *, prefix: str = "") -> JsonRpcException:
    """``-32602`` naming the field: ``data = {"reason": "invalidParams", "field": "a.b"}``."""
    field = ".".join(str(p) for p in ([prefix] if prefix else []) + list(exc.path))
    detail = str(exc).split(": ", 1)[-1]  # the field path of str(exc) never holds ": "
    message = f"Invalid params: {field or 'params'}: {detail}"
    return reason_error("invalidParams", message, {"field": field})


def reason_error(reason: str, message: str, data: dict[str, Any] | None = None) -> JsonRpcException:
    """The error for ``reason`` (its code from the table), ``data = {"reason": reason, **data}``."""
    return JsonRpcException(message=message, code=codes.code_for(reason), data={"reason": reason, **(data or {})})


def pi_error(exc: PiError) -> JsonRpcException:
    """The error for ``exc``: the code of ``exc.reason``, ``data = {"reason": …, **exc.data}``."""
    return reason_error(exc.reason, exc.message, exc.data)


def internal_error(exc: BaseException, where: str) -> JsonRpcException:
    """Log ``exc`` with its traceback; the client gets ``-32603`` and the exception type only."""
    logger.error("unexpected error in %s", where, exc_info=exc)
    return reason_error("internal", f"Internal error: {type(exc).__name__}")


def to_rpc_error(exc: Exception, where: str) -> JsonRpcException:
    """Map any exception raised by a handler to the error sent to the client."""
    if isinstance(exc, JsonRpcException):
        return exc
    if isinstance(exc, PiError):
        return pi_error(exc)
    if isinstance(exc, StructureError):
        return invalid_params(exc)
    return internal_error(exc, where)

"""The registration helper the ``pi_sessiond.handlers`` modules use.

``server.method(name, ParamsCls)(fn)`` registers ``fn`` under ``name``:
params are structured with :func:`pi_protocol.structure` (``None``/missing
params count as ``{}``; a :class:`~pi_protocol.StructureError` becomes
``-32602`` naming the field), ``fn`` is called (sync or ``async def``), its
result is unstructured with :func:`pi_protocol.unstructure`, and exceptions
are mapped by :func:`pi_sessiond.rpc.errors.to_rpc_error`. With
``progress=True`` (``async def`` only) ``fn`` gets a per-request
:class:`~pi_sessiond.service.interface.ProgressFactory` as second argument.
``CancelledError`` is re-raised, so the client gets ``-32800``.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pygls.exceptions import JsonRpcException

from pi_protocol import StructureError, structure, unstructure
from pi_sessiond.rpc.errors import invalid_params, to_rpc_error

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer

F = TypeVar("F", bound=Callable[..., Any])


def structure_params(params: Any, params_cls: type[Any] | None) -> Any:
    """Raw JSON params -> ``params_cls`` (or the raw value when ``params_cls`` is ``None``)."""
    if params_cls is None:
        return params
    try:
        return structure({} if params is None else params, params_cls)
    except StructureError as exc:
        raise invalid_params(exc) from None


def register_method(
    server: PiServer, name: str, params_cls: type[Any] | None, fn: Callable[..., Any], *, progress: bool = False
) -> None:
    """Register ``fn`` as the handler of request/notification ``name`` (see the module docstring)."""
    handler: Callable[[Any], Any]
    if inspect.iscoroutinefunction(fn):

        async def async_handler(params: Any) -> Any:
            typed = structure_params(params, params_cls)
            factory = server.progress_factory() if progress else None
            try:
                result = await (fn(typed, factory) if factory is not None else fn(typed))
            except (asyncio.CancelledError, JsonRpcException):
                raise
            except Exception as exc:
                raise to_rpc_error(exc, name) from None
            finally:
                if factory is not None:
                    factory.close()
            return unstructure(result)

        handler = async_handler
    else:
        if progress:
            raise TypeError(f"{name}: progress=True needs an async def handler")

        def sync_handler(params: Any) -> Any:
            typed = structure_params(params, params_cls)
            try:
                result = fn(typed)
            except JsonRpcException:
                raise
            except Exception as exc:
                raise to_rpc_error(exc, name) from None
            return unstructure(result)

        handler = sync_handler
    handler.__name__ = getattr(fn, "__name__", name)
    handler.__doc__ = fn.__doc__
    server.protocol.fm.feature(name)(handler)

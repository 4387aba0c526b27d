"""JSON-RPC requests -> the Daemon methods that `service.daemon.HANDLERS` binds to the method table's rows.

:func:`register_table` registers every row of :data:`pi_protocol.methods.METHODS`:
its handler structures the params into the row's params class with
:func:`pi_protocol.structure` (``None``/missing params count as ``{}``; a
:class:`~pi_protocol.StructureError` becomes ``-32602`` naming the field),
calls the row's ``Daemon`` method on the connection's daemon (created at the
first request if it does not exist yet, see :mod:`pi_sessiond.rpc.deferred`),
unstructures the result with :func:`pi_protocol.unstructure` and maps
exceptions with :func:`pi_sessiond.rpc.errors.to_rpc_error`. A row with
``progress`` passes a per-request
:class:`~pi_sessiond.service.interface.ProgressFactory` as second argument and
ends any bar left open. A service that is a coroutine function runs as the
request's task (see :meth:`pi_sessiond.rpc.protocol.PiProtocol._execute_handler`);
``CancelledError`` is re-raised, so the client gets ``-32800``. Heavy rows run
in a worker thread, one request per session at a time (:mod:`pi_sessiond.rpc.offload`).
:func:`register_method` does the same for one callable (the ``debug/*`` methods).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from pi_protocol import StructureError, structure, unstructure
from pi_protocol.methods import GET_CONTEXT, METHODS, OPEN_SESSION, MethodSpec
from pi_sessiond.rpc.errors import invalid_params, to_rpc_error
from pi_sessiond.rpc.offload import (
    EARLY,
    GATED,
    OFFLOADED,
    Ready,
    SessionGates,
    after_load,
    gate_key,
    prefer_the_loop,
)

if TYPE_CHECKING:
    from pi_sessiond.rpc.glue import LspProgressFactory
    from pi_sessiond.rpc.server import PiServer

Service = Callable[..., Any]


def structure_params(params: Any, params_cls: type[Any] | None) -> Any:
    """Raw JSON params -> ``params_cls`` (or the raw value when ``params_cls`` is ``None``)."""
    if params_cls is None:
        return params
    try:
        return structure({} if params is None else params, params_cls)
    except StructureError as exc:
        raise invalid_params(exc) from None


def register_table(server: PiServer, daemon: Callable[[], Any], handlers: Callable[[], Mapping[str, Service]]) -> None:
    """Register every ``pi/*`` method of the table; ``daemon()`` answers them with its method in ``handlers()``.

    ``handlers()`` is the ``Daemon`` method of each row (``service.daemon.HANDLERS``), read once, by the
    first request: importing it loads the services, which is kept out of the time to ``initialize``.
    Rows in :data:`~pi_sessiond.rpc.offload.GATED` wait for their session's gate, and those in
    :data:`~pi_sessiond.rpc.offload.OFFLOADED` run in a worker thread (see :mod:`pi_sessiond.rpc.offload`).
    """
    gates = SessionGates()
    prefer_the_loop()
    table: list[Mapping[str, Service]] = []

    def bound(name: str) -> Service:
        if not table:
            from pi_sessiond.summarizers import workers

            workers.use_processes()  # the offline summary in processes of its own: the loop keeps the GIL
            table.append(handlers())
        return table[0][name]

    def known(key: str) -> bool:
        return bool(daemon().has_session(key))

    def pending(key: str | None) -> Callable[[], object] | None:
        return daemon().pending_load(key)  # type: ignore[no-any-return]

    for spec in METHODS:
        fn = _row(spec, lambda *args, name=spec.name: bound(name)(daemon(), *args), gates, known)
        if spec.name not in EARLY:
            fn = after_load(fn, pending)
        if spec.name == GET_CONTEXT:
            fn = _after_compaction(fn, daemon)
        _register(server, spec.name, _params_of(spec), fn, progress=spec.progress)


def _params_of(spec: MethodSpec) -> Callable[[], type[Any]]:
    """The row's params class, built when its first request is structured."""
    return lambda: spec.params


def _after_compaction(fn: Service, daemon: Callable[[], Any]) -> Service:
    """``pi/getContext`` with ``waitForCompaction``: the wait first, outside the session's gate (appends go on)."""

    def call(*args: Any) -> Any:
        if not getattr(args[0], "wait_for_compaction", False):
            return fn(*args)
        return _then(daemon().compaction_settled(args[0]), lambda: fn(*args))

    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


async def _then(first: Awaitable[Any], call: Callable[[], Any]) -> Any:
    await first
    result = call()
    return await result if inspect.isawaitable(result) else result


def _row(spec: MethodSpec, fn: Service, gates: SessionGates, known: Callable[[str], bool]) -> Service:
    """``fn`` behind its session's gate (``GATED``), in a thread (``OFFLOADED``), after the opens it needs."""
    gated, thread, opens = spec.name in GATED, spec.name in OFFLOADED, spec.name == OPEN_SESSION

    def call(*args: Any) -> Any:
        key = gate_key(args[0])
        if gated:
            work = gates.after_opens(key, known, lambda: gates.run(key, lambda: fn(*args), thread=thread))
        else:
            work = gates.after_opens(key, known, lambda: fn(*args))
        return gates.opening(work) if opens else work

    call.__name__, call.__doc__ = spec.name, spec.doc
    return call


def register_method(
    server: PiServer, name: str, params_cls: type[Any] | None, fn: Service, *, progress: bool = False
) -> None:
    """Register ``fn`` (sync, or returning an awaitable) as the handler of ``name`` (see the module docstring)."""
    _register(server, name, lambda: params_cls, fn, progress=progress)


def _register(
    server: PiServer, name: str, params_of: Callable[[], type[Any] | None], fn: Service, *, progress: bool
) -> None:
    """:func:`register_method` with the params class looked up by the first request (its row names it)."""

    def handler(params: Any) -> Any:
        typed = structure_params(params, params_of())
        factory = server.progress_factory() if progress else None
        try:
            result = fn(typed, factory) if factory is not None else fn(typed)
        except JsonRpcException:
            _close(factory)
            raise
        except Exception as exc:
            _close(factory)
            raise to_rpc_error(exc, name) from None
        if inspect.isawaitable(result):
            return _finish(result, name, factory)
        _close(factory)
        return unstructure(result)

    handler.__name__ = getattr(fn, "__name__", name)
    handler.__doc__ = fn.__doc__
    server.protocol.fm.feature(name)(handler)


async def _finish(result: Awaitable[Any], name: str, factory: LspProgressFactory | None) -> Any:
    try:
        value = await result
    except (asyncio.CancelledError, JsonRpcException):
        raise
    except Exception as exc:
        raise to_rpc_error(exc, name) from None
    finally:
        _close(factory)
    return value.value if isinstance(value, Ready) else unstructure(value)


def _close(factory: LspProgressFactory | None) -> None:
    if factory is not None:
        factory.close()

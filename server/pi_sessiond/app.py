"""The server factory: one :class:`~pi_sessiond.rpc.server.PiServer` per connection.

``make_server()`` builds the server, puts the connection's daemon
(:class:`pi_sessiond.service.daemon.Daemon`, wired to the server's event sink,
hook client and a progress factory) in its
:class:`~pi_sessiond.rpc.deferred.DaemonSlot`, and registers the method table
(:func:`pi_sessiond.rpc.methods.register_table`) and, when asked, the
``debug/*`` test methods. There is no module-level server.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pi_sessiond.rpc.deferred import DaemonLifecycle, DaemonSlot
from pi_sessiond.rpc.methods import register_table
from pi_sessiond.rpc.server import PiServer
from pi_sessiond.service.interface import EventSink, HookClient, ProgressFactory

DEBUG_METHODS_ENV = "PI_SESSIOND_DEBUG_METHODS"

DaemonFactory = Callable[[EventSink, HookClient, ProgressFactory], DaemonLifecycle]


def default_daemon_factory(sessions_dir: str | None, network_client: bool = False) -> DaemonFactory:
    """``Daemon(events=…, hooks=…, sessions_dir=…, progress=…, network_client=…)``; imported when it is called.

    The import is inside on purpose: it is what :class:`DaemonSlot` keeps out
    of the time to the ``initialize`` reply.
    """

    def create(events: EventSink, hooks: HookClient, progress: ProgressFactory) -> DaemonLifecycle:
        from pi_sessiond.service.daemon import Daemon

        path = Path(sessions_dir) if sessions_dir is not None else None
        return Daemon(events=events, hooks=hooks, sessions_dir=path, progress=progress, network_client=network_client)

    return create


def _handlers() -> Mapping[str, Callable[..., Any]]:
    """``service.daemon.HANDLERS``, imported by the first request (the services stay out of the start-up)."""
    from pi_sessiond.service.daemon import HANDLERS

    return HANDLERS


def make_server(
    *,
    daemon_factory: DaemonFactory | None = None,
    sessions_dir: str | None = None,
    debug_methods: bool | None = None,
    defer_daemon: bool = True,
    network_client: bool = False,
    handlers: Callable[[], Mapping[str, Callable[..., Any]]] | None = None,
) -> PiServer:
    """A new server with its own daemon and every method of the table registered.

    ``daemon_factory(events, hooks, progress)`` defaults to :func:`default_daemon_factory`
    (``progress`` makes the bars of background auto-compactions). With
    ``defer_daemon`` (the default) the daemon is created right after the
    ``initialize`` reply or at the first request, which keeps the services'
    imports out of the start-up time. ``debug_methods`` (default: the
    ``PI_SESSIOND_DEBUG_METHODS=1`` environment variable) adds the ``debug/*``
    test methods of :mod:`pi_sessiond.rpc.debug`. ``network_client``: the connection is
    TCP or WebSocket (the summarizer's key, URL and headers are then the global file's).
    ``handlers()``: the daemon method of each row, by default ``service.daemon.HANDLERS``
    (``rpc.sharing`` gives those of a daemon whose connections share sessions).
    """
    server = PiServer()
    make_daemon = daemon_factory or default_daemon_factory(sessions_dir, network_client)
    slot = DaemonSlot(lambda: make_daemon(server.events, server.hooks, server.progress_factory()), server.log_error)
    server.daemon = slot
    if not defer_daemon:
        slot.get()
    register_table(server, slot.get, handlers or _handlers)
    if debug_methods if debug_methods is not None else os.environ.get(DEBUG_METHODS_ENV) == "1":
        from pi_sessiond.rpc import debug  # test-only methods: their imports stay out of every other start

        debug.register(server)
    return server

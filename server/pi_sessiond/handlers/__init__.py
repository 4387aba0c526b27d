"""Thin JSON-RPC handlers: typed params in, one service call, a protocol object out.

Each module registers the methods of one area on the server with
``server.method(name, ParamsCls)``, which structures the params (``-32602``
naming the field), unstructures the result and maps service errors to codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_sessiond.handlers import sessions, settings, summaries, tree

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer
    from pi_sessiond.service.daemon import Daemon


def register(server: PiServer, daemon: Daemon) -> None:
    """Register every ``pi/*`` method of PROTOCOL.md."""
    for module in (sessions, tree, summaries, settings):
        module.register(server, daemon)

"""The TCP and Unix-socket listeners: each connection gets its own endpoint, admitted by a gate.

Above the gate's connection cap a new connection gets one ``busy`` error and
is closed; on a Unix socket a peer of another user is closed at once (Linux
tells its uid). The socket of :func:`serve_unix` is created ``0600`` (the
caller makes its directory private, :func:`pi_sessiond.wire.auth.prepare_socket_path`)
and removed when the listener stops. What a connection may do is
:func:`pi_sessiond.wire.transport.serve_connection`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from pi_sessiond.wire.transport import HEADER_LINE_LIMIT, Admission, Endpoint, RareWarning, StreamSink, serve_connection

logger = logging.getLogger(__name__)
OVER_CAP = RareWarning("refused a connection: daemon.maxConnections are open")
FOREIGN = RareWarning("refused a connection from another user on the Unix socket")


async def serve_tcp(
    host: str,
    port: int,
    make_endpoint: Callable[[], Endpoint],
    ready: Callable[[str, int], None] | None = None,
    gate: Admission | None = None,
) -> None:
    """Accept connections forever; each gets its own endpoint (and Daemon), admitted by ``gate``."""
    server = await asyncio.start_server(_on_connection(make_endpoint, gate), host, port, limit=HEADER_LINE_LIMIT)
    async with server:
        sock_host, sock_port = server.sockets[0].getsockname()[:2]
        if ready is not None:
            ready(sock_host, sock_port)
        await server.serve_forever()


async def serve_unix(
    path: str,
    make_endpoint: Callable[[], Endpoint],
    ready: Callable[[str], None] | None = None,
    gate: Admission | None = None,
) -> None:
    """Accept connections on the Unix socket ``path`` (mode 0600; its directory must be private) forever."""
    old_umask = os.umask(0o177)  # the socket is created 0600, never wider even for an instant
    try:
        server = await asyncio.start_unix_server(_on_connection(make_endpoint, gate), path, limit=HEADER_LINE_LIMIT)
    finally:
        os.umask(old_umask)
    os.chmod(path, 0o600)
    inode = os.stat(path).st_ino
    try:
        async with server:
            if ready is not None:
                ready(path)
            await server.serve_forever()
    finally:
        with contextlib.suppress(OSError):
            if os.stat(path).st_ino == inode:
                os.unlink(path)


def _on_connection(make_endpoint: Callable[[], Endpoint], gate: Admission | None) -> Any:
    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername") or "(unix socket)"
        if gate is not None and not gate.peer_ok(writer.get_extra_info("socket")):
            FOREIGN()
            writer.close()
            return
        if gate is not None and not gate.admit():
            OVER_CAP()
            sink = StreamSink(writer)
            sink.send(gate.refusal())
            await sink.close()
            return
        logger.info("client %s connected", peer)
        try:
            code = await serve_connection(make_endpoint(), reader, StreamSink(writer), gate)
            logger.info("client %s done (exit code %d)", peer, code)
        except asyncio.CancelledError:
            # The listener is stopping (SIGTERM, shutdown): this is the connection task's outermost frame
            # and nothing awaits it; ending it cancelled would make Python 3.11's stream callback log a
            # traceback per connected client.
            logger.info("client %s closed: the daemon is stopping", peer)
        except Exception:
            logger.exception("connection %s failed", peer)
        finally:
            if gate is not None:
                gate.release()

    return on_connection

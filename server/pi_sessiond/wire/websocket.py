"""The WebSocket listener: one JSON-RPC message per text frame (no ``Content-Length``), as pygls does.

Needs the optional ``websockets`` package (``pip install 'pi-sessiond[ws]'``).
Every connection gets its own endpoint (server and Daemon), like a TCP one
(:mod:`pi_sessiond.wire.listeners`), admitted by the same gate: a handshake with an
``Origin`` header is refused (HTTP 403) unless that origin is allowed (a web
page cannot drive the daemon); the secret comes in the URL (``?token=``), an
``Authorization: Bearer`` header or the first message (``initialize``); a
connection above ``daemon.maxConnections`` gets one ``busy`` error and is
closed; an idle one (nothing in flight) is closed after ``daemon.idleConnectionSeconds``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import parse_qs, urlsplit

from pi_sessiond.wire.transport import (
    DEFAULT_MAX_MESSAGE_BYTES,
    SNIFF_BYTES,
    Admission,
    Endpoint,
    IdleTimeout,
    RareWarning,
    idle_limit,
    sniff_id,
)

logger = logging.getLogger(__name__)
OVER_CAP = RareWarning("refused a WebSocket connection: daemon.maxConnections are open")
UNAUTHENTICATED = RareWarning("refused a WebSocket connection without the daemon's secret")
FOREIGN_ORIGIN = RareWarning("refused a WebSocket handshake from a foreign Origin")


class _WebSocketSink:
    """One JSON-RPC message per WebSocket text frame (no Content-Length), as pygls does."""

    def __init__(self, websocket: Any) -> None:
        self._ws = websocket
        self._closed = False
        self._tasks: set[asyncio.Task[Any]] = set()

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, body: bytes) -> None:
        if not self._closed:
            task = asyncio.ensure_future(self._ws.send(body.decode()))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def drain(self) -> None:
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        await self.drain()
        self._closed = True


async def serve_ws(
    host: str,
    port: int,
    make_endpoint: Callable[[], Endpoint],
    ready: Callable[[str, int], None] | None = None,
    max_size: int = DEFAULT_MAX_MESSAGE_BYTES,
    gate: Admission | None = None,
    origins: Collection[str] = (),
) -> None:
    """WebSocket listener (needs the optional ``websockets`` package, ``pi-sessiond[ws]``).

    A message above the endpoint's ``max_message_bytes`` is answered ``-32008``;
    one above ``max_size`` (the listener's cap, fixed when it starts) closes that
    connection, as ``websockets`` does. ``origins``: the ``Origin`` values a
    handshake may carry (none: only clients that send no ``Origin``, i.e. not browsers).
    """
    import importlib

    ws_server: Any = importlib.import_module("websockets.asyncio.server")

    def process_request(connection: Any, request: Any) -> Any:
        origin = request.headers.get("Origin")
        if origin is not None and origin not in origins:
            FOREIGN_ORIGIN()
            return connection.respond(403, "Forbidden: this Origin may not connect (serve --allow-origin)\n")
        return None

    async def on_connection(websocket: Any) -> None:
        if gate is not None and not gate.admit():
            OVER_CAP()
            await websocket.send(gate.refusal().decode())
            await websocket.close(1013, "too many connections")
            return
        try:
            await _serve(websocket, make_endpoint(), gate)
        finally:
            if gate is not None:
                gate.release()

    async with ws_server.serve(on_connection, host, port, max_size=max_size, process_request=process_request) as server:
        sock_host, sock_port = next(iter(server.sockets)).getsockname()[:2]
        if ready is not None:
            ready(sock_host, sock_port)
        await server.serve_forever()


async def _serve(websocket: Any, endpoint: Endpoint, gate: Admission | None) -> None:
    sink = _WebSocketSink(websocket)
    stopped = asyncio.Event()
    endpoint.attach(sink, stopped.set)
    pending = gate is not None and gate.needs_secret and not gate.token_ok(handshake_token(websocket.request))
    try:
        while not stopped.is_set():
            message = await _recv(websocket, endpoint, idle_limit(gate, pending))
            body = message.encode() if isinstance(message, str) else message
            if pending:
                assert gate is not None
                passed, refusal = gate.check_first(body)
                if passed is None:
                    UNAUTHENTICATED()
                    sink.send(refusal or b"{}")
                    await sink.drain()
                    await websocket.close(1008, "unauthorized")
                    return
                body, pending = passed, False
            if len(body) > endpoint.max_message_bytes:
                endpoint.protocol.too_large(len(body), endpoint.max_message_bytes, sniff_id(body[:SNIFF_BYTES]))
            else:
                endpoint.protocol.receive(body)
            await sink.drain()
    except IdleTimeout:
        logger.info("closed a WebSocket connection idle for daemon.idleConnectionSeconds")
        await websocket.close(1000, "idle")
    except Exception as exc:
        logger.info("websocket connection ended: %s", exc)
    finally:
        await endpoint.aclose()
        await sink.close()


async def _recv(websocket: Any, endpoint: Endpoint, idle: float | None) -> Any:
    while True:
        try:
            async with asyncio.timeout(idle):
                return await websocket.recv()
        except TimeoutError:
            if not endpoint.busy():
                raise IdleTimeout from None


def handshake_token(request: Any) -> str | None:
    """The secret a handshake carries: ``?token=`` in its URL or ``Authorization: Bearer``."""
    if request is None:
        return None
    tokens = parse_qs(urlsplit(request.path).query).get("token")
    if tokens:
        return str(tokens[0])
    auth = request.headers.get("Authorization") or ""
    scheme, _, value = auth.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None

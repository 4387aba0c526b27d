"""The WebSocket listener: one JSON-RPC message per text frame (no ``Content-Length``), as pygls does.

Needs the optional ``websockets`` package (``pip install 'pi-sessiond[ws]'``).
Every connection gets its own endpoint (server and Daemon), like a TCP one
(:mod:`pi_sessiond.transport`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pi_sessiond.transport import DEFAULT_MAX_MESSAGE_BYTES, SNIFF_BYTES, Endpoint, sniff_id

logger = logging.getLogger(__name__)


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
) -> None:
    """WebSocket listener (needs the optional ``websockets`` package, ``pygls[ws]``).

    A message above the endpoint's ``max_message_bytes`` is answered ``-32008``;
    one above ``max_size`` (the listener's cap, fixed when it starts) closes that
    connection, as ``websockets`` does.
    """
    import importlib

    ws_server: Any = importlib.import_module("websockets.asyncio.server")

    async def on_connection(websocket: Any) -> None:
        endpoint = make_endpoint()
        sink = _WebSocketSink(websocket)
        stopped = asyncio.Event()
        endpoint.attach(sink, stopped.set)
        try:
            async for message in websocket:
                body = message.encode() if isinstance(message, str) else message
                if len(body) > endpoint.max_message_bytes:
                    endpoint.too_large(len(body), endpoint.max_message_bytes, sniff_id(body[:SNIFF_BYTES]))
                else:
                    endpoint.receive(body)
                await sink.drain()
                if stopped.is_set():
                    break
        except Exception as exc:
            logger.info("websocket connection ended: %s", exc)
        finally:
            await endpoint.aclose()
            await sink.close()

    async with ws_server.serve(on_connection, host, port, max_size=max_size) as server:
        sock_host, sock_port = next(iter(server.sockets)).getsockname()[:2]
        if ready is not None:
            ready(sock_host, sock_port)
        await server.serve_forever()

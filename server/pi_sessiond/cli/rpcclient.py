"""A small blocking JSON-RPC client over LSP framing, for ``pi-sessiond call``.

It talks to a daemon subprocess's pipes or to a TCP socket, answers the
daemon's own requests (progress token creation) with ``null``, and skips
notifications.
"""

from __future__ import annotations

import itertools
import socket
import subprocess
from typing import IO, Any

import orjson

from pi_sessiond.jsonio.deepjson import deep_dumps
from pi_sessiond.jsonio.jsontext import loads


class RpcError(Exception):
    """The daemon answered a request with an error object."""

    def __init__(self, error: dict[str, Any]) -> None:
        super().__init__(str(error.get("message", "error")))
        self.error = error


class RpcClient:
    """Requests one at a time; the daemon's requests and notifications are handled inline."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)

    @classmethod
    def spawn(cls, command: list[str]) -> tuple[RpcClient, subprocess.Popen[bytes]]:
        """Start a daemon subprocess and connect to its stdio."""
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None
        return cls(proc.stdout, proc.stdin), proc

    @classmethod
    def connect(cls, host: str, port: int) -> tuple[RpcClient, socket.socket]:
        """Connect to a daemon serving TCP."""
        sock = socket.create_connection((host, port), timeout=600)
        return cls(sock.makefile("rb"), sock.makefile("wb")), sock

    @classmethod
    def connect_unix(cls, path: str) -> tuple[RpcClient, socket.socket]:
        """Connect to a daemon serving a Unix socket."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(600)
        try:
            sock.connect(path)
        except OSError:
            sock.close()
            raise
        return cls(sock.makefile("rb"), sock.makefile("wb")), sock

    def send(self, message: dict[str, Any]) -> None:
        try:
            body = orjson.dumps(message)
        except TypeError:  # nested deeper than orjson writes
            body = deep_dumps(message).encode("utf-8")
        self._writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._writer.flush()

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> Any:
        """Send a request and wait for its answer (raises :class:`RpcError`)."""
        msg_id = next(self._ids)
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        while True:
            message = self._read()
            if "method" in message:
                if "id" in message:  # a request of the daemon: progress token creation, hooks
                    self.send({"jsonrpc": "2.0", "id": message["id"], "result": None})
                continue
            if message.get("id") != msg_id:
                continue
            if "error" in message:
                raise RpcError(message["error"])
            return message.get("result")

    def _read(self) -> dict[str, Any]:
        length = None
        while True:
            line = self._reader.readline()
            if not line:
                raise EOFError("the daemon closed the connection")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value.strip())
        if length is None:
            raise EOFError("a frame without Content-Length")
        message = loads(self._reader.read(length))  # any depth the daemon writes
        return message if isinstance(message, dict) else {}

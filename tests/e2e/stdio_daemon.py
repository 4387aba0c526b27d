"""The daemon as a subprocess on stdio with a minimal LSP-framed client, optionally under an ``RLIMIT_FSIZE``.

Replies are queued in the order the daemon sends them (:meth:`Daemon.recv`),
so tests can check which of several pipelined requests was answered first.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import resource
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

TIMEOUT = 120.0


class Daemon:
    """``python -m pi_sessiond serve`` on stdio, optionally under an ``RLIMIT_FSIZE``."""

    def __init__(self, *, fsize: int | None = None, env: dict[str, str] | None = None, init: bool = True) -> None:
        """``init``: send a plain ``initialize`` first (requests before it are refused ``-32002``)."""
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()

        def limit() -> None:
            if fsize is not None:
                resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pi_sessiond", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr, env={**os.environ, "LOOPBACK_KEY": "k", **(env or {})}, preexec_fn=limit,
        )
        self.replies: queue.Queue[Any] = queue.Queue()
        self.ids = iter(range(1, 10**6))
        threading.Thread(target=self._read, daemon=True).start()
        if init:
            self.ok("initialize", {"processId": None, "rootUri": None, "capabilities": {}})

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while header := out.readline():
            length = int(header.split(b":")[1])
            out.readline()
            message = json.loads(out.read(length))
            if "id" in message and "method" not in message:
                self.replies.put(message)
        self.replies.put(EOFError())

    def send(self, method: str, params: Any) -> int:
        """Send one request without waiting; its id."""
        msg_id = next(self.ids)
        body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        self.proc.stdin.flush()
        return msg_id

    def recv(self) -> dict[str, Any]:
        """The next reply, in the order the daemon sent them."""
        reply = self.replies.get(timeout=TIMEOUT)
        if isinstance(reply, EOFError):
            raise AssertionError(f"the daemon exited: {self.log()}")
        return dict(reply)

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """The reply (``result`` or ``error``) to one request."""
        msg_id = self.send(method, params)
        reply = self.recv()
        assert reply["id"] == msg_id
        return reply

    def ok(self, method: str, params: Any) -> Any:
        reply = self.call(method, params)
        assert "result" in reply, reply
        return reply["result"]

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


@contextlib.contextmanager
def daemon(**kwargs: Any) -> Iterator[Daemon]:
    """A running :class:`Daemon`, killed on the way out."""
    running = Daemon(**kwargs)
    try:
        yield running
    finally:
        running.stop()

"""Serving one client on stdin/stdout (the editors' transport): :func:`run_stdio`.

The protocol's stdout moves to a private fd first, so a stray ``print`` lands on
stderr; stdin and stdout may be pipes, ttys, sockets or regular files
(``printf FRAMES | pi-sessiond serve``, ``pi-sessiond serve < frames > out``).
The framing and the connection's rules are :func:`pi_sessiond.wire.transport.serve_connection`'s.

When stdout is a pipe it is widened to :data:`PIPE_BYTES` (Linux ``F_SETPIPE_SZ``, best effort):
a big reply (a 1.6 MB context) then crosses in a few writes instead of one per 64 KiB, each of
which waits for the client to read and the loop to wake (on a loaded machine, a scheduling delay
each). The bytes on the wire do not change.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
import sys
import threading
from collections.abc import Callable

from pi_sessiond.wire.transport import HEADER_LINE_LIMIT, Endpoint, StreamSink, serve_connection


class _BlockingWriter:
    """A ``StreamWriter`` look-alike for a stdout that is a regular file (no pipe transport)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def is_closing(self) -> bool:
        return False

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    async def wait_closed(self) -> None:
        return None



PIPE_BYTES = 1 << 20
"""What a stdout pipe is widened to (Linux's default ``/proc/sys/fs/pipe-max-size`` for any user)."""


def widen_pipe(fd: int, size: int = PIPE_BYTES) -> int:
    """Make the pipe ``fd`` hold ``size`` bytes if it holds less; returns its size after (0: not a pipe or not Linux).

    Best effort: a refusal (the user's pipe-buffer quota, ``pipe-max-size``) leaves the pipe as it was.
    """
    try:
        import fcntl

        if not stat.S_ISFIFO(os.fstat(fd).st_mode) or not hasattr(fcntl, "F_GETPIPE_SZ"):
            return 0
        current = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
        if current < size:
            with contextlib.suppress(OSError):
                current = fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
        return int(current)
    except (ImportError, OSError):
        return 0


def _protect_stdout() -> int:
    """Move the protocol's stdout to a private fd; stray prints then land on stderr."""
    fd = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    return fd


async def _stdin_reader(loop: asyncio.AbstractEventLoop) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=HEADER_LINE_LIMIT, loop=loop)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), sys.stdin.buffer)
    except ValueError:  # a regular file: feed it from a thread
        threading.Thread(target=_feed_file, args=(loop, reader, sys.stdin.buffer.fileno()), daemon=True).start()
    return reader


def _feed_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    while chunk := os.read(fd, 1 << 16):
        loop.call_soon_threadsafe(reader.feed_data, chunk)
    loop.call_soon_threadsafe(reader.feed_eof)


async def _stdout_sink(loop: asyncio.AbstractEventLoop, fd: int) -> StreamSink:
    widen_pipe(fd)
    pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)  # the fd outlives this wrapper
    try:
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    except ValueError:  # not a pipe, socket or tty (e.g. a regular file): plain blocking writes
        return StreamSink(_BlockingWriter(fd))  # type: ignore[arg-type]
    return StreamSink(asyncio.StreamWriter(transport, protocol, None, loop))


def run_stdio(make_endpoint: Callable[[], Endpoint]) -> int:
    """Serve one client on stdin/stdout; returns the process exit code."""
    out_fd = _protect_stdout()

    async def main() -> int:
        loop = asyncio.get_running_loop()
        reader = await _stdin_reader(loop)
        sink = await _stdout_sink(loop, out_fd)
        return await serve_connection(make_endpoint(), reader, sink)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return 130

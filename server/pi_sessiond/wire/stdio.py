"""Serving one client on stdin/stdout (the editors' transport): :func:`run_stdio`.

The protocol's stdout moves to a private fd first, so a stray ``print`` lands on
stderr; stdin and stdout may be pipes, ttys, sockets, regular files or other devices
(``printf FRAMES | pi-sessiond serve``, ``pi-sessiond serve < frames > out``, ``</dev/null``).
Pipes, sockets and ttys are watched by the event loop; anything else (a file, ``/dev/null``,
``/dev/zero``) is read by a thread and written with plain blocking writes, since epoll refuses it.
A closed stdin or stdout is one line on stderr and exit code 1; a closed stderr silences the logs.
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
        self._broken = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(self._fd, view) :]
        except OSError:  # a full disk, /dev/full, a reader gone: nothing more can be sent
            self._broken = True

    def is_closing(self) -> bool:
        return self._broken

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    async def wait_closed(self) -> None:
        return None



TERMINAL_HINT = ("pi-sessiond: serving JSON-RPC (LSP framing) on stdin/stdout for an editor; "
                 "Ctrl-D ends it. `pi-sessiond --help` lists the commands for people.")

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
    """Move the protocol's stdout to a private fd; stray prints then land on stderr (or nowhere)."""
    fd = os.dup(sys.stdout.fileno())
    try:
        os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    except (AttributeError, OSError):  # stderr is closed
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return fd


def pollable(fd: int) -> bool:
    """Whether the event loop can watch ``fd``: a pipe, a socket or a terminal (epoll refuses files and
    most character devices, such as ``/dev/null``)."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)


def unusable_stdio() -> str | None:
    """Why stdin/stdout cannot carry the protocol (one of them is closed), else ``None``."""
    for name, stream, fd in (("stdin", sys.stdin, 0), ("stdout", sys.stdout, 1)):
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            mode = None
        if stream is None or mode is None:
            return f"{name} is closed; serving on stdio needs both stdin and stdout (or use --tcp / --unix)"
    return None


async def _stdin_reader(loop: asyncio.AbstractEventLoop) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=HEADER_LINE_LIMIT, loop=loop)
    fd = sys.stdin.buffer.fileno()
    if pollable(fd):
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), sys.stdin.buffer)
    else:
        threading.Thread(target=_feed_file, args=(loop, reader, fd), daemon=True).start()
    return reader


def _feed_file(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Read ``fd`` until its end, one chunk handed over at a time; a read error counts as the end."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            chunk = b""
        taken = threading.Event()

        def feed(data: bytes = chunk, event: threading.Event = taken) -> None:
            reader.feed_data(data) if data else reader.feed_eof()
            event.set()

        try:
            loop.call_soon_threadsafe(feed)
        except RuntimeError:  # the loop has ended
            return
        while not taken.wait(1.0):
            if loop.is_closed():
                return
        if not chunk:
            return


async def _stdout_sink(loop: asyncio.AbstractEventLoop, fd: int) -> StreamSink:
    widen_pipe(fd)
    if not pollable(fd):  # a regular file or a device such as /dev/null: plain blocking writes
        return StreamSink(_BlockingWriter(fd))  # type: ignore[arg-type]
    pipe = os.fdopen(fd, "wb", buffering=0, closefd=False)  # the fd outlives this wrapper
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, pipe)
    return StreamSink(asyncio.StreamWriter(transport, protocol, None, loop))


def run_stdio(make_endpoint: Callable[[], Endpoint]) -> int:
    """Serve one client on stdin/stdout; returns the process exit code."""
    problem = unusable_stdio()
    if problem is not None:
        print(f"pi-sessiond serve: {problem}", file=sys.stderr)
        return 1
    if os.isatty(0) and os.isatty(2):
        print(TERMINAL_HINT, file=sys.stderr, flush=True)
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

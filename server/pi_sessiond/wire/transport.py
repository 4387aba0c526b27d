"""LSP base framing over asyncio streams (stdio: :mod:`.stdio`, sockets: :mod:`.listeners`, :mod:`.websocket`).

The reader accepts what real clients send and nothing it cannot resync from:
header names in any case, CRLF or bare LF line ends, any extra headers;
``Content-Length`` is required and must be a decimal number. A message above
the size limit (the endpoint's ``max_message_bytes``, read for every message:
``daemon.maxMessageBytes`` as the connection's settings say now) is read and
discarded in chunks (never held in memory) and answered ``-32008 tooLarge``
(with its id when it can be seen before ``params``, else ``id: null``). A
broken frame cannot be recovered from in
any framing (a wrong length shifts every later message), so a missing or
non-numeric ``Content-Length``, a malformed header line or EOF inside a
message stops the connection: answered with one ``-32700 parseError`` (``id: null``) where the
stream still takes it, logged, exit code 1 for stdio (fail fast).

The writer sends ``Content-Length: <bytes>\\r\\n\\r\\n<body>`` in one write per
message on a non-blocking transport; the read loop awaits ``drain()`` before
reading the next message, so a client that stops reading stops being read
(backpressure) instead of growing the server's buffer.

Each connection is served by its own endpoint (a ``PiServer`` with its own
Daemon, see :mod:`pi_sessiond.app`); TCP, Unix-socket and WebSocket listeners
survive any connection closing.

A listener takes an :class:`Admission` (``pi_sessiond.wire.auth.ConnectionGuard``): above
its connection cap a new connection gets one ``busy`` error and is closed; a
connection that needs the secret has its first message checked (at most
:data:`PREAUTH_MAX_BYTES`; refused: one ``unauthorized`` error, then closed);
a connection with nothing in flight that sends nothing for its idle timeout
is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from pi_protocol.settings import DEFAULT_SETTINGS

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = DEFAULT_SETTINGS.daemon.max_message_bytes
HEADER_LINE_LIMIT = 64 * 1024
PREAUTH_MAX_BYTES = 1024 * 1024  # the first message of a connection that must authenticate
PREAUTH_SECONDS = 10.0  # ... and the time it has to send it (a silent flood frees its slots soon)
_READ_CHUNK = 256 * 1024
EOF_GRACE_SECONDS = 30.0  # at end of input, requests in flight get this long to finish and answer
SNIFF_BYTES = 4096
_HEADER_NAME = re.compile(rb"[A-Za-z0-9!#$%&'*+.^_`|~-]+")
_LEADING_MEMBER = re.compile(
    rb'\s*"(jsonrpc|id|method)"\s*:\s*("(?:[^"\\]|\\.)*"|-?\d+|null)\s*,?',
)


class FramingError(Exception):
    """A frame that cannot be parsed; the connection cannot continue."""


class Receiver(Protocol):
    """Where a connection's frames go: the JSON-RPC protocol itself (``PiProtocol``)."""

    def receive(self, body: bytes) -> None:
        """One frame's body (parsed, dispatched and answered there)."""
        ...

    def too_large(self, size: int, limit: int, msg_id: Any) -> None:
        """A frame over the limit was skipped: answer ``msg_id`` with ``tooLarge``."""
        ...

    def broken_frame(self, problem: str) -> None:
        """A frame cannot be parsed: answer it (``id: null``); the connection closes right after."""
        ...


class Endpoint(Protocol):
    """One connection's server (``PiServer`` implements it)."""

    @property
    def protocol(self) -> Receiver:
        """The JSON-RPC protocol the frames are fed to."""
        ...

    @property
    def max_message_bytes(self) -> int:
        """The size limit of the next message (``daemon.maxMessageBytes`` in force)."""
        ...

    @property
    def exit_code(self) -> int | None: ...

    def attach(self, sink: Any, stop: Callable[[], None]) -> None:
        """Start sending to ``sink``; ``stop()`` ends the read loop (LSP ``exit``)."""
        ...

    async def settle(self, grace: float) -> None:
        """Let the requests in flight finish (and answer) for up to ``grace`` seconds."""
        ...

    async def aclose(self) -> None:
        """Cancel what still runs and release the daemon."""
        ...

    def busy(self) -> bool:
        """Whether a request is still running (an idle timeout waits for it)."""
        ...


class Admission(Protocol):
    """A listener's admission rules (``pi_sessiond.wire.auth.ConnectionGuard`` implements it)."""

    idle_seconds: float
    open: int

    @property
    def needs_secret(self) -> bool: ...

    def admit(self) -> bool:
        """Count a new connection; ``False`` when the cap is reached (not counted)."""
        ...

    def release(self) -> None: ...

    def refusal(self) -> bytes:
        """The error body sent to a connection above the cap."""
        ...

    def peer_ok(self, sock: Any) -> bool: ...

    def token_ok(self, token: str | None) -> bool: ...

    def check_first(self, body: bytes) -> tuple[bytes | None, bytes | None]:
        """``(body to pass on, None)`` when the first message authenticates, else ``(None, error body)``."""
        ...


class RareWarning:
    """A warning an attacker can repeat at will: logged the 1st, 2nd, 4th, 8th… time (a flood never floods the log)."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._count = 0

    def __call__(self) -> None:
        self._count += 1
        if self._count & (self._count - 1) == 0:
            logger.warning("%s (%d so far)", self._text, self._count)


UNAUTHENTICATED = RareWarning("refused a connection: its first message did not carry the daemon's secret")


class IdleTimeout(Exception):
    """A connection sent nothing, with nothing in flight, for its idle timeout."""


class _Oversize:
    def __init__(self, size: int, msg_id: Any) -> None:
        self.size = size
        self.msg_id = msg_id


# ---------------------------------------------------------------- reading


class FrameParser:
    """Incremental base-protocol parser: bytes in, bodies out, no coroutine per message.

    ``feed()`` yields each complete body (or :class:`_Oversize` once a message
    above ``limit()`` has been discarded) and raises :class:`FramingError` at
    the first frame it cannot parse — after yielding the frames before it.
    """

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._buf = bytearray()
        self._pos = 0
        self._in_header = False
        self._declared: int | None = None
        self._length: int | None = None
        self._discard = 0
        self._discard_size = 0
        self._sniff = b""

    def feed(self, data: bytes) -> Iterator[bytes | _Oversize]:
        self._buf += data
        try:
            while True:
                if self._discard:
                    if not self._skip():
                        return
                    yield _Oversize(self._discard_size, sniff_id(self._sniff))
                    continue
                if self._length is None and not self._parse_header():
                    return
                length = self._length
                assert length is not None
                if length > self._limit():
                    self._length, self._discard, self._discard_size, self._sniff = None, length, length, b""
                    continue
                if len(self._buf) - self._pos < length:
                    return
                body = bytes(self._buf[self._pos : self._pos + length])
                self._pos += length
                self._length = None
                yield body
        finally:
            del self._buf[: self._pos]
            self._pos = 0

    def eof(self) -> None:
        """Raise :class:`FramingError` unless the stream ended between messages."""
        if self._discard:
            raise FramingError(f"connection closed inside an oversized body ({self._discard} bytes missing)")
        if self._length is not None:
            raise FramingError(
                f"connection closed inside a body ({len(self._buf) - self._pos} of {self._length} bytes)"
            )
        if self._in_header or self._buf[self._pos :].strip():
            raise FramingError("connection closed inside a header")

    def _skip(self) -> bool:
        available = min(self._discard, len(self._buf) - self._pos)
        if len(self._sniff) < SNIFF_BYTES:
            self._sniff += bytes(self._buf[self._pos : self._pos + min(available, SNIFF_BYTES - len(self._sniff))])
        self._pos += available
        self._discard -= available
        return self._discard == 0

    def _parse_header(self) -> bool:
        buf = self._buf
        while True:
            newline = buf.find(b"\n", self._pos)
            if newline < 0:
                if len(buf) - self._pos > HEADER_LINE_LIMIT:
                    raise FramingError(f"header line longer than {HEADER_LINE_LIMIT} bytes")
                return False
            line = bytes(buf[self._pos : newline]).strip()
            self._pos = newline + 1
            if not line:
                if not self._in_header:
                    continue  # blank lines between messages are harmless
                if self._declared is None:
                    raise FramingError("no Content-Length header")
                self._length, self._declared, self._in_header = self._declared, None, False
                return True
            self._in_header = True
            self._header_line(line)

    def _header_line(self, line: bytes) -> None:
        name, sep, value = line.partition(b":")
        name = name.strip()
        if not sep or not _HEADER_NAME.fullmatch(name):
            raise FramingError(f"malformed header line {line[:80]!r}")
        if name.lower() == b"content-length":
            value = value.strip()
            if not value.isdigit():
                raise FramingError(f"non-numeric Content-Length {value[:40]!r}")
            self._declared = int(value)


def sniff_id(head: bytes) -> Any:
    """The top-level ``id`` when it comes before any structured member (as clients write it)."""
    if not head.lstrip().startswith(b"{"):
        return None
    pos = head.index(b"{") + 1
    while match := _LEADING_MEMBER.match(head, pos):
        if match.group(1) == b"id":
            raw = match.group(2)
            if raw == b"null":
                return None
            if raw.startswith(b'"'):
                try:
                    return raw[1:-1].decode()
                except UnicodeDecodeError:
                    return None
            return int(raw)
        pos = match.end()
    return None


async def serve_connection(
    endpoint: Endpoint, reader: asyncio.StreamReader, sink: StreamSink, gate: Admission | None = None
) -> int:
    """Serve one connection until EOF, ``exit``, a framing error or the gate's refusal; returns the exit code.

    0 at EOF or after ``shutdown`` + ``exit``, 1 for ``exit`` without
    ``shutdown``, a broken frame or a refused first message. At a clean EOF
    (``printf FRAMES | pi-sessiond serve``) the requests already read get up to
    :data:`EOF_GRACE_SECONDS` to finish and be answered; what still runs then is
    cancelled (nothing half-written) and answered ``-32800``.
    """
    stopped = asyncio.Event()
    endpoint.attach(sink, stopped.set)
    pending_auth = [gate is not None and gate.needs_secret]
    parser = FrameParser(lambda: PREAUTH_MAX_BYTES if pending_auth[0] else endpoint.max_message_bytes)
    code = 0
    try:
        while not stopped.is_set():
            await sink.drain()
            chunk = await _read(reader, endpoint, idle_limit(gate, pending_auth[0]))
            if not chunk:
                parser.eof()
                logger.info("end of input: requests in flight get up to %.0f s to finish", EOF_GRACE_SECONDS)
                await endpoint.settle(EOF_GRACE_SECONDS)
                await sink.drain()
                break
            for frame in parser.feed(chunk):
                if pending_auth[0]:
                    assert gate is not None
                    passed = _authenticate(gate, frame, sink)
                    if passed is None:
                        return 1
                    frame, pending_auth[0] = passed, False
                if isinstance(frame, _Oversize):
                    logger.info("skipped a %d-byte message (limit %d)", frame.size, endpoint.max_message_bytes)
                    endpoint.protocol.too_large(frame.size, endpoint.max_message_bytes, frame.msg_id)
                else:
                    endpoint.protocol.receive(frame)
                if stopped.is_set():
                    break
    except FramingError as exc:
        logger.error("unrecoverable framing error, closing the connection: %s", exc)
        endpoint.protocol.broken_frame(str(exc))
        code = 1
    except IdleTimeout:
        logger.info("closed a connection idle for daemon.idleConnectionSeconds with nothing in flight")
    except (ConnectionError, BrokenPipeError) as exc:
        logger.info("connection lost: %s", exc)
    finally:
        await endpoint.aclose()
        await sink.close()
    return endpoint.exit_code if endpoint.exit_code is not None else code


def idle_limit(gate: Admission | None, pending_auth: bool) -> float | None:
    """How long a connection may stay silent: the gate's idle timeout, shorter before it authenticated."""
    if gate is None:
        return None
    return min(gate.idle_seconds, PREAUTH_SECONDS) if pending_auth else gate.idle_seconds


async def _read(reader: asyncio.StreamReader, endpoint: Endpoint, idle: float | None) -> bytes:
    """The next chunk; :class:`IdleTimeout` after ``idle`` seconds of silence with nothing in flight."""
    while True:
        try:
            async with asyncio.timeout(idle):
                return await reader.read(_READ_CHUNK)
        except TimeoutError:
            if not endpoint.busy():
                raise IdleTimeout from None


def _authenticate(gate: Admission, frame: bytes | _Oversize, sink: StreamSink) -> bytes | None:
    """The first message with the secret removed, or ``None`` after answering ``unauthorized``."""
    if isinstance(frame, _Oversize):
        frame = b"{}"
    body, refusal = gate.check_first(frame)
    if body is None:
        UNAUTHENTICATED()
        assert refusal is not None
        sink.send(refusal)
    return body


# ---------------------------------------------------------------- writing


class StreamSink:
    """Frames bodies onto an asyncio ``StreamWriter``; one write per message."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed or self._writer.is_closing()

    def send(self, body: bytes) -> None:
        if not self.closed:
            self._writer.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))

    async def drain(self) -> None:
        if not self.closed:
            await self._writer.drain()

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(ConnectionError, BrokenPipeError, RuntimeError):
            await self._writer.drain()
            self._writer.close()
            await self._writer.wait_closed()

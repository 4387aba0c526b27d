"""An incremental Server-Sent Events parser (WHATWG "event stream" format).

Invariants:

- Input arrives in arbitrary chunks; a line or a CRLF pair may be split across
  chunks. Lines end with CRLF, LF or CR, exactly as the spec says.
- ``data:`` lines accumulate (joined with ``\\n``) until a blank line
  dispatches the event; ``event:`` sets its type (default ``message``),
  ``id:`` the last event id, ``retry:`` the reconnection time; lines starting
  with ``:`` are comments; one space after the colon is dropped.
- An event still pending when the stream ends is dispatched too (lenient:
  some OpenAI-compatible servers omit the final blank line). Whether the
  stream ended *early* is the provider's call, not the parser's.
- A line longer than :data:`MAX_LINE_CHARS` or a ``data`` payload that is not
  JSON (:func:`json_data`) raises a retryable :class:`SummarizerError`.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import attrs

from .errors import SummarizerError

MAX_LINE_CHARS = 16 * 1024 * 1024


@attrs.frozen
class SSEEvent:
    """One dispatched event."""

    event: str = "message"
    data: str = ""
    id: str | None = None
    retry: int | None = None


class LineSplitter:
    """Bytes in, complete text lines out (without their terminators)."""

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._buffer = ""
        self._pending_cr = False

    def feed(self, chunk: bytes) -> list[str]:
        """The lines completed by ``chunk``."""
        return self._split(self._decoder.decode(chunk))

    def flush(self) -> list[str]:
        """The last, unterminated line (if any) at end of stream."""
        lines = self._split(self._decoder.decode(b"", final=True))
        if self._buffer:
            lines.append(self._buffer)
            self._buffer = ""
        return lines

    def _split(self, text: str) -> list[str]:
        if self._pending_cr and text.startswith("\n"):
            text = text[1:]  # the LF of a CRLF split across chunks
        self._pending_cr = False
        if not text:
            return []
        parts = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._pending_cr = text.endswith("\r")
        parts[0] = self._buffer + parts[0]
        self._buffer = parts.pop()
        if len(self._buffer) > MAX_LINE_CHARS:
            raise SummarizerError("malformed stream: line too long", retryable=True)
        return parts


class SSEDecoder:
    """Lines in, events out."""

    def __init__(self) -> None:
        self._event = ""
        self._data: list[str] = []
        self._id: str | None = None
        self._retry: int | None = None

    def feed_line(self, line: str) -> SSEEvent | None:
        """Process one line; returns an event when ``line`` is blank and one is ready."""
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        elif field == "id" and "\0" not in value:
            self._id = value
        elif field == "retry" and value.isdigit():
            self._retry = int(value)
        return None

    def flush(self) -> SSEEvent | None:
        """Dispatch whatever is pending at end of stream."""
        return self._dispatch()

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent(event=self._event or "message", data="\n".join(self._data), id=self._id, retry=self._retry)
        self._event = ""
        self._data = []
        return event


def parse_lines(lines: Iterable[str]) -> list[SSEEvent]:
    """All events in ``lines`` (a convenience for tests and small inputs)."""
    decoder = SSEDecoder()
    events = [event for line in lines if (event := decoder.feed_line(line)) is not None]
    last = decoder.flush()
    return [*events, last] if last is not None else events


async def aiter_lines(chunks: AsyncIterable[bytes]) -> AsyncIterator[str]:
    """Text lines from a byte stream such as ``httpx.Response.aiter_bytes()``."""
    splitter = LineSplitter()
    async for chunk in chunks:
        for line in splitter.feed(chunk):
            yield line
    for line in splitter.flush():
        yield line


async def aiter_events(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Events from a line stream (:func:`aiter_lines`, or ``httpx.Response.aiter_lines()``)."""
    decoder = SSEDecoder()
    async for line in lines:
        event = decoder.feed_line(line)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last


def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Events from a byte stream."""
    return aiter_events(aiter_lines(chunks))


def json_data(event: SSEEvent) -> dict[str, Any]:
    """The event's ``data`` as a JSON object; anything else is a malformed stream."""
    try:
        value = json.loads(event.data)
    except ValueError as exc:
        raise SummarizerError(f"malformed stream: invalid JSON in {event.event!r} event", retryable=True) from exc
    if not isinstance(value, dict):
        raise SummarizerError(f"malformed stream: {event.event!r} event data is not an object", retryable=True)
    return value

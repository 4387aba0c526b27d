"""The SSE parser: line splitting across chunks, fields, comments, CRLF, malformed JSON."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from pi_sessiond.summarizers.errors import SummarizerError
from pi_sessiond.summarizers.sse import (
    MAX_LINE_CHARS,
    LineSplitter,
    SSEEvent,
    aiter_events,
    aiter_sse,
    json_data,
    parse_lines,
)


async def _chunks(*chunks: bytes) -> AsyncIterator[bytes]:
    for chunk in chunks:
        yield chunk


async def _events(*chunks: bytes) -> list[SSEEvent]:
    return [event async for event in aiter_sse(_chunks(*chunks))]


async def test_events_with_type_id_and_multi_line_data() -> None:
    stream = b'event: message_start\nid: 7\ndata: {"a":\ndata: 1}\n\ndata: second\n\n'
    assert await _events(stream) == [
        SSEEvent(event="message_start", data='{"a":\n1}', id="7"),
        SSEEvent(event="message", data="second", id="7"),
    ]


async def test_comments_are_ignored_and_blank_events_are_not_dispatched() -> None:
    stream = b": keep-alive\n\n:another\ndata: x\n\n\n\n"
    assert await _events(stream) == [SSEEvent(data="x")]


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
async def test_every_line_ending(newline: bytes) -> None:
    stream = newline.join([b"event: e", b"data: 1", b"", b"data: 2", b"", b""])
    assert await _events(stream) == [SSEEvent(event="e", data="1"), SSEEvent(data="2")]


async def test_chunks_split_anywhere_give_the_same_events() -> None:
    stream = 'event: delta\r\ndata: {"text":"héllo"}\r\n\r\n: c\r\ndata: [DONE]\r\n\r\n'.encode()
    whole = await _events(stream)
    for size in (1, 2, 3, 5):
        pieces = [stream[i : i + size] for i in range(0, len(stream), size)]
        assert await _events(*pieces) == whole
    assert whole == [SSEEvent(event="delta", data='{"text":"héllo"}'), SSEEvent(data="[DONE]")]


def test_crlf_split_between_chunks_is_one_line_break() -> None:
    splitter = LineSplitter()
    assert splitter.feed(b"data: a\r") == ["data: a"]
    assert splitter.feed(b"\ndata: b\r\n") == ["data: b"]
    assert splitter.feed(b"\r\n") == [""]


def test_field_rules() -> None:
    events = parse_lines(["data:no-space", "data:  two-spaces", "retry: 300", "id: a\0b", "bogus line", "event", ""])
    assert events == [SSEEvent(event="message", data="no-space\n two-spaces", retry=300)]


async def test_pending_event_is_flushed_at_end_of_stream() -> None:
    assert await _events(b"data: [DONE]") == [SSEEvent(data="[DONE]")]


async def test_line_stream_input() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in ["event: x", "data: 1", ""]:
            yield line

    assert [event async for event in aiter_events(lines())] == [SSEEvent(event="x", data="1")]


def test_overlong_line_is_a_retryable_malformed_stream() -> None:
    splitter = LineSplitter()
    with pytest.raises(SummarizerError, match="malformed stream") as info:
        splitter.feed(b"x" * (MAX_LINE_CHARS + 1))
    assert info.value.retryable


def test_json_data() -> None:
    assert json_data(SSEEvent(data='{"a": 1}')) == {"a": 1}
    for bad in ('{"a":', "[1, 2]", "not json"):
        with pytest.raises(SummarizerError, match="malformed stream") as info:
            json_data(SSEEvent(event="content_block_delta", data=bad))
        assert info.value.retryable

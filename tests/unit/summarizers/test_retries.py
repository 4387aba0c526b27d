"""Retries, limits, Retry-After, context length, cancellation and secrecy — both providers, real loopback HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
import pytest
from tests.loopback_provider import Fault, LoopbackProvider

from pi_sessiond.summarizers.anthropic import AnthropicSummarizer
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError
from pi_sessiond.summarizers.http import (
    HttpSummarizer,
    backoff_delay,
    is_context_overflow,
    parse_retry_after,
)
from pi_sessiond.summarizers.openai import OpenAISummarizer

KEY = "sk-loopback-secret-key-5f3a9c"
REQUEST = SummaryRequest(
    system_prompt="You summarize.", prompt="<conversation>\n[User]: hi\n</conversation>", max_tokens=512
)
PROVIDERS = ["openai", "anthropic"]
PROMPTLY = 5.0  # seconds: "at once, not after a timeout" (latency goals live in bench/, not in tests)


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        yield provider


def make(provider: str, loopback: LoopbackProvider, **overrides: Any) -> HttpSummarizer:
    """A summarizer for ``provider`` pointed at the loopback, with tiny retry delays."""
    settings = SummarizerSettings(
        provider=provider,
        model="loopback-model",
        base_url=loopback.base_url + ("/v1" if provider == "openai" else ""),
        timeout_seconds=5.0,
        max_retries=2,
        retry_base_delay=0.001,
        retry_max_delay=0.01,
    )
    settings = attrs.evolve(settings, **overrides)
    if provider == "openai":
        return OpenAISummarizer(settings, KEY)
    return AnthropicSummarizer(settings, KEY)


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_errors_are_retried_then_succeed(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("500", "503", "ok")
    summarizer = make(provider, loopback)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert "## Goal" in result.text
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_limit_gives_a_summarizer_error_with_status(provider: str, loopback: LoopbackProvider) -> None:
    loopback.set_default("500")
    summarizer = make(provider, loopback, max_retries=2)
    try:
        with pytest.raises(SummarizerError) as info:
            await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert info.value.status == 500
    assert "gave up after 3 attempts" in info.value.message
    assert ("Internal server error" if provider == "anthropic" else "The server had an error") in info.value.message
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_is_honoured(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("429", retry_after=0.3), "ok")
    summarizer = make(provider, loopback, retry_max_delay=5.0)
    try:
        await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    first, second = loopback.requests
    assert second.received_at - first.received_at >= 0.3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_is_capped_by_the_max_delay(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("503", retry_after=30), "ok")
    summarizer = make(provider, loopback, retry_max_delay=0.05)
    started = time.monotonic()
    try:
        await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert time.monotonic() - started < 15  # not the 30 s the server asked for


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_context_length_is_not_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("context_length")
    summarizer = make(provider, loopback)
    try:
        with pytest.raises(ContextLengthError) as info:
            await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert info.value.status == 400
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["reset", "reset_mid_stream", "malformed", "truncated", "empty", "tool_only", "500"])
async def test_transient_failures_are_retried_then_succeed(
    provider: str, mode: str, loopback: LoopbackProvider
) -> None:
    loopback.script(mode, "ok")
    summarizer = make(provider, loopback)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert "## Goal" in result.text
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("mode", "message"),
    [
        ("reset", "connection failed"),
        ("reset_mid_stream", "connection failed"),
        ("malformed", "malformed stream"),
        ("truncated", "truncated stream"),
        ("empty", "empty answer"),
        ("tool_only", "tool calls only"),
    ],
)
async def test_transient_failures_give_up_at_the_limit(
    provider: str, mode: str, message: str, loopback: LoopbackProvider
) -> None:
    loopback.set_default(mode)
    summarizer = make(provider, loopback, max_retries=1)
    try:
        with pytest.raises(SummarizerError, match=message) as info:
            await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert not isinstance(info.value, ContextLengthError)
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_read_timeout_is_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("delay", delay=1.0), "ok")
    summarizer = make(provider, loopback, timeout_seconds=0.2)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert result.text
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_client_errors_are_not_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("500", status=403))
    summarizer = make(provider, loopback)
    try:
        with pytest.raises(SummarizerError) as info:
            await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert info.value.status == 403
    assert not info.value.retryable
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cancellation_closes_the_connection_at_once(provider: str, loopback: LoopbackProvider) -> None:
    loopback.set_default("stall")
    streaming = asyncio.Event()
    summarizer = make(provider, loopback)
    task = asyncio.create_task(summarizer.summarize(REQUEST, progress=lambda _tokens: streaming.set()))
    try:
        await asyncio.wait_for(streaming.wait(), 5)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 2
        while loopback.requests[0].disconnected_at is None and time.monotonic() < deadline:
            await asyncio.sleep(0.005)
    finally:
        task.cancel()
        await summarizer.aclose()
    disconnected_at = loopback.requests[0].disconnected_at
    assert disconnected_at is not None
    assert disconnected_at - cancelled_at < PROMPTLY  # a stall never ends by itself: closed by the cancel
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_cancellation_during_backoff_is_not_swallowed(provider: str, loopback: LoopbackProvider) -> None:
    loopback.set_default("500")
    summarizer = make(provider, loopback, retry_base_delay=5.0, retry_max_delay=5.0)
    task = asyncio.create_task(summarizer.summarize(REQUEST))
    try:
        while not loopback.requests or not loopback.requests[0].completed:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        await summarizer.aclose()
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_key_never_appears_in_logs_or_errors(
    provider: str, loopback: LoopbackProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    loopback.script("500", "reset", "malformed", "ok", "context_length", "429")
    summarizer = make(provider, loopback, max_retries=3)
    errors: list[str] = []
    try:
        await summarizer.summarize(REQUEST)
        for _ in range(2):
            try:
                await summarizer.summarize(REQUEST)
            except SummarizerError as exc:
                errors.append(str(exc))
    finally:
        await summarizer.aclose()
    assert len(errors) == 1
    assert any(
        r.headers.get("x-api-key") == KEY or KEY in r.headers.get("authorization", "") for r in loopback.requests
    )
    logged = [record.getMessage() for record in caplog.records] + [caplog.text]
    assert not [text for text in logged + errors if KEY in text]


ECHOES = [
    (
        "openai",
        401,
        "application/json",
        {"error": {"message": f"Incorrect API key provided: {KEY}", "code": "invalid_api_key"}},
    ),
    (
        "anthropic",
        401,
        "application/json",
        {"type": "error", "error": {"type": "authentication_error", "message": f"bad key {KEY}"}},
    ),
    ("openai", 200, "text/event-stream", {"error": {"message": f"upstream rejected {KEY}", "code": 401}}),
    (
        "anthropic",
        200,
        "text/event-stream",
        {"type": "error", "error": {"type": "overloaded_error", "message": f"busy {KEY}"}},
    ),
]


@contextlib.asynccontextmanager
async def echo_server(status: int, content_type: str, payload: dict[str, object]) -> AsyncIterator[str]:
    """A one-answer HTTP server on 127.0.0.1 whose reply echoes the key (the loopback's errors never do)."""
    data = json.dumps(payload).encode()
    if content_type == "text/event-stream":
        data = b"event: error\ndata: " + data + b"\n\n"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").lower()
        length = int(head.split("content-length:", 1)[1].split("\r\n", 1)[0])
        await reader.readexactly(length)
        writer.write(
            f"HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {len(data)}\r\n"
            f"connection: close\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    async with server:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.parametrize(("provider", "status", "content_type", "payload"), ECHOES)
async def test_a_key_echoed_by_the_server_is_redacted(
    provider: str, status: int, content_type: str, payload: dict[str, object], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    async with echo_server(status, content_type, payload) as base_url:
        fake = LoopbackProvider()
        fake.base_url = base_url
        summarizer = make(provider, fake, max_retries=0)
        try:
            with pytest.raises(SummarizerError) as info:
                await summarizer.summarize(REQUEST)
        finally:
            await summarizer.aclose()
    assert info.value.status in (401, 529)
    assert "***" in str(info.value)
    chain: BaseException | None = info.value
    while chain is not None:
        assert KEY not in str(chain)
        chain = chain.__cause__
    assert KEY not in caplog.text


def test_parse_retry_after() -> None:
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_with_jitter_within_bounds() -> None:
    settings = SummarizerSettings(retry_base_delay=1.0, retry_max_delay=8.0)
    for attempt in range(8):
        for _ in range(20):
            assert 1.0 <= backoff_delay(settings, attempt) <= min(8.0, 2**attempt)
    assert backoff_delay(settings, 0) == 1.0
    assert backoff_delay(settings, 3, retry_after=100) == 8.0
    assert backoff_delay(settings, 3, retry_after=0.2) == 0.2


@pytest.mark.parametrize(
    "message",
    [
        "prompt is too long: 210000 tokens > 200000 maximum",
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "Input is too long for requested model.",
        "the request exceeds the available context size, try increasing it",
        "400 status code (no body)",
        "Requested token count exceeds the model's maximum context length",
        "input token count of 300000 exceeds the maximum of 200000",
    ],
)
def test_context_overflow_patterns(message: str) -> None:
    assert is_context_overflow(message)


def test_context_overflow_code_and_negatives() -> None:
    assert is_context_overflow("bad request", "context_length_exceeded")
    assert not is_context_overflow("Rate limit reached for requests")
    assert not is_context_overflow("Invalid API key")

"""The one retry layer over both providers (real loopback HTTP): transient errors, limits, Retry-After,
context length, stop reasons, cancellation and secrecy. The providers themselves make one attempt."""

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

from pi_protocol.settings import RetrySettings
from pi_sessiond.summarizers.anthropic import AnthropicSummarizer
from pi_sessiond.summarizers.base import SummaryRequest, SummaryResult
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError
from pi_sessiond.summarizers.http import HttpSummarizer, is_context_overflow, parse_retry_after
from pi_sessiond.summarizers.openai import OpenAISummarizer
from pi_sessiond.summarizers.retry import RetryNotice, is_transient, retry_delay, with_retries

KEY = "sk-loopback-secret-key-5f3a9c"
REQUEST = SummaryRequest(
    system_prompt="You summarize.", prompt="<conversation>\n[User]: hi\n</conversation>", max_tokens=512
)
PROVIDERS = ["openai", "anthropic"]
PROMPTLY = 5.0  # seconds: "at once, not after a timeout" (latency goals live in bench/, not in tests)
TINY = RetrySettings(max_retries=2, base_delay_ms=1, max_agent_delay_ms=10)


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        yield provider


def make(provider: str, loopback: LoopbackProvider, **overrides: Any) -> HttpSummarizer:
    """A summarizer for ``provider`` pointed at the loopback."""
    settings = SummarizerSettings(
        provider=provider,
        model="loopback-model",
        base_url=loopback.base_url + ("/v1" if provider == "openai" else ""),
        timeout_seconds=5.0,
    )
    settings = attrs.evolve(settings, **overrides)
    if provider == "openai":
        return OpenAISummarizer(settings, KEY)
    return AnthropicSummarizer(settings, KEY)


async def retried(
    summarizer: HttpSummarizer, policy: RetrySettings = TINY, notices: list[RetryNotice] | None = None
) -> SummaryResult:
    """One summary through the retry layer (closing the summarizer afterwards)."""
    try:
        return await with_retries(
            lambda: summarizer.summarize(REQUEST), policy, notices.append if notices is not None else None
        )
    finally:
        await summarizer.aclose()


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_provider_itself_makes_one_attempt(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("503", "ok")
    summarizer = make(provider, loopback)
    try:
        with pytest.raises(SummarizerError) as info:
            await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert info.value.retryable and info.value.status == 503
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_server_errors_are_retried_then_succeed(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("500", "503", "ok")
    notices: list[RetryNotice] = []
    result = await retried(make(provider, loopback), notices=notices)
    assert "## Goal" in result.text
    assert len(loopback.requests) == 3
    assert [(n.attempt, n.attempts, n.delay) for n in notices] == [(2, 3, 0.001), (3, 3, 0.002)]
    assert "503" in notices[1].reason and "attempt 3 of 3" in notices[1].message


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_limit_gives_a_summarizer_error_with_status(provider: str, loopback: LoopbackProvider) -> None:
    loopback.set_default("500")
    with pytest.raises(SummarizerError) as info:
        await retried(make(provider, loopback))
    assert info.value.status == 500
    assert "gave up after 3 attempts" in info.value.message
    assert ("Internal server error" if provider == "anthropic" else "The server had an error") in info.value.message
    assert len(loopback.requests) == 3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retries_disabled_means_one_attempt(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("503", "ok")
    notices: list[RetryNotice] = []
    with pytest.raises(SummarizerError):
        await retried(make(provider, loopback), attrs.evolve(TINY, enabled=False), notices)
    assert len(loopback.requests) == 1 and notices == []


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_is_honoured(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("429", retry_after=0.3), "ok")
    notices: list[RetryNotice] = []
    await retried(make(provider, loopback), attrs.evolve(TINY, max_agent_delay_ms=5000), notices)
    first, second = loopback.requests
    assert second.received_at - first.received_at >= 0.3
    assert notices[0].delay == 0.3


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_retry_after_is_capped_by_max_agent_delay(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("503", retry_after=30), "ok")
    notices: list[RetryNotice] = []
    started = time.monotonic()
    await retried(make(provider, loopback), attrs.evolve(TINY, max_agent_delay_ms=50), notices)
    assert time.monotonic() - started < 15  # not the 30 s the server asked for
    assert [n.delay for n in notices] == [0.05]


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_context_length_is_not_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script("context_length")
    with pytest.raises(ContextLengthError) as info:
        await retried(make(provider, loopback))
    assert info.value.status == 400
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("mode", ["reset", "reset_mid_stream", "malformed", "truncated", "500", "503"])
async def test_transient_failures_are_retried_then_succeed(
    provider: str, mode: str, loopback: LoopbackProvider
) -> None:
    loopback.script(mode, "ok")
    result = await retried(make(provider, loopback))
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
    ],
)
async def test_transient_failures_give_up_at_the_limit(
    provider: str, mode: str, message: str, loopback: LoopbackProvider
) -> None:
    loopback.set_default(mode)
    with pytest.raises(SummarizerError, match=message) as info:
        await retried(make(provider, loopback), attrs.evolve(TINY, max_retries=1))
    assert not isinstance(info.value, ContextLengthError)
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(("mode", "stop", "has_text"), [("length", "length", True), ("tool_only", "toolUse", False),
                                                        ("empty", "stop", False), ("ok", "stop", True)])
async def test_stop_reasons_are_reported_not_retried(
    provider: str, mode: str, stop: str, has_text: bool, loopback: LoopbackProvider
) -> None:
    loopback.script(mode, "ok")
    result = await retried(make(provider, loopback))
    assert result.stop_reason == stop
    assert bool(result.text.strip()) is has_text
    assert len(loopback.requests) == 1


def test_quota_and_billing_errors_are_not_transient() -> None:
    assert is_transient(SummarizerError("HTTP 429: Rate limit reached", status=429, retryable=True))
    assert not is_transient(SummarizerError("HTTP 429: You exceeded your quota: insufficient_quota", retryable=True))
    assert not is_transient(SummarizerError("HTTP 402: check your billing details", retryable=True))
    assert not is_transient(ContextLengthError("prompt is too long", status=400))
    assert not is_transient(SummarizerError("HTTP 401: bad key", status=401))


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_read_timeout_is_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("delay", delay=1.0), "ok")
    result = await retried(make(provider, loopback, timeout_seconds=0.2))
    assert result.text
    assert len(loopback.requests) == 2


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_client_errors_are_not_retried(provider: str, loopback: LoopbackProvider) -> None:
    loopback.script(Fault("500", status=403))
    with pytest.raises(SummarizerError) as info:
        await retried(make(provider, loopback))
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
    task = asyncio.create_task(retried(make(provider, loopback), RetrySettings(base_delay_ms=5000)))
    while not loopback.requests or not loopback.requests[0].completed:
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert len(loopback.requests) == 1


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_the_key_never_appears_in_logs_or_errors(
    provider: str, loopback: LoopbackProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    loopback.script("500", "reset", "malformed", "ok", "context_length", "429")
    summarizer = make(provider, loopback)
    policy = attrs.evolve(TINY, max_retries=3)
    errors: list[str] = []
    try:
        await with_retries(lambda: summarizer.summarize(REQUEST), policy)
        for _ in range(2):
            try:
                await with_retries(lambda: summarizer.summarize(REQUEST), policy)
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
        summarizer = make(provider, fake)
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


def test_retry_delay_doubles_from_the_base_and_is_capped() -> None:
    policy = RetrySettings()  # Pi 1.6.0's defaults: 2000 ms doubling, capped at 60000 ms
    assert [retry_delay(policy, n) for n in range(1, 7)] == [2.0, 4.0, 8.0, 16.0, 32.0, 60.0]
    assert retry_delay(policy, 2, retry_after=100) == 60.0
    assert retry_delay(policy, 2, retry_after=0.2) == 0.2


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

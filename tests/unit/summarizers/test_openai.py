"""The OpenAI-compatible provider against the loopback server: body, headers, streaming, usage, progress."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from tests.loopback_provider import LoopbackProvider, count_tokens, default_reply

from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.openai import (
    OpenAISummarizer,
    explicit_cache_mode,
    is_reasoning_model,
    openai_usage,
    reasoning_effort,
)

KEY = "sk-openai-loopback-7d21e0"
REQUEST = SummaryRequest(
    system_prompt="You summarize.", prompt="<conversation>\n[User]: fix the bug\n</conversation>", max_tokens=4000
)


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        yield provider


def make(loopback: LoopbackProvider, key: str | None = KEY, **overrides: Any) -> OpenAISummarizer:
    settings = SummarizerSettings(
        provider="openai",
        model="llama-3.1-8b",
        base_url=loopback.base_url + "/v1",
    )
    return OpenAISummarizer(attrs.evolve(settings, **overrides), key)


async def test_streams_text_and_records_usage(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    (recorded,) = loopback.requests
    assert recorded.method == "POST" and recorded.path == "/v1/chat/completions"
    expected = default_reply(recorded.body)
    assert len(expected) > 200  # many 40-character chunks were assembled
    assert result.text == expected
    assert (result.provider, result.model) == ("openai", "llama-3.1-8b")
    prompt_tokens = count_tokens(REQUEST.system_prompt) + count_tokens(REQUEST.prompt)
    assert result.usage.output == count_tokens(expected)
    assert result.usage.input + result.usage.cache_read > 0
    assert abs(result.usage.input - prompt_tokens) <= 2
    assert result.usage.total_tokens == result.usage.input + result.usage.output


async def test_request_body_and_headers(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback, headers={"X-Title": "pi-sessiond"})
    try:
        await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    (recorded,) = loopback.requests
    assert recorded.body == {
        "model": "llama-3.1-8b",
        "messages": [
            {"role": "system", "content": REQUEST.system_prompt},
            {"role": "user", "content": REQUEST.prompt},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 4000,  # the request's output limit (summarizer.maxTokens is applied when it is built)
    }
    assert recorded.headers["authorization"] == f"Bearer {KEY}"
    assert recorded.headers["x-title"] == "pi-sessiond"


async def test_no_key_no_authorization_header(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback, key=None)
    try:
        await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    assert "authorization" not in loopback.requests[0].headers


async def test_reasoning_model_gets_effort_and_max_completion_tokens(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback, model="gpt-5-mini")
    try:
        await summarizer.summarize(SummaryRequest(system_prompt="s", prompt="p", max_tokens=2000, reasoning="xhigh"))
        await summarizer.summarize(SummaryRequest(system_prompt="s", prompt="p", max_tokens=2000, reasoning="off"))
    finally:
        await summarizer.aclose()
    first, second = (r.body for r in loopback.requests)
    assert first["reasoning_effort"] == "high"
    assert first["max_completion_tokens"] == 2000 and "max_tokens" not in first
    assert "reasoning_effort" not in second


async def test_non_reasoning_model_gets_no_effort_unless_told(loopback: LoopbackProvider) -> None:
    request = SummaryRequest(system_prompt="s", prompt="p", max_tokens=100, reasoning="medium")
    plain, forced = (
        make(loopback),
        OpenAISummarizer(
            SummarizerSettings(provider="openai", base_url=loopback.base_url + "/v1", model="qwen3-8b"),
            None,
            reasoning_model=True,
        ),
    )
    try:
        await plain.summarize(request)
        await forced.summarize(request)
    finally:
        await plain.aclose()
        await forced.aclose()
    assert "reasoning_effort" not in loopback.requests[0].body
    assert loopback.requests[1].body["reasoning_effort"] == "medium"


async def test_progress_reports_increasing_token_counts(loopback: LoopbackProvider) -> None:
    counts: list[int] = []
    summarizer = make(loopback)
    try:
        result = await summarizer.summarize(REQUEST, progress=counts.append)
    finally:
        await summarizer.aclose()
    assert len(counts) > 3
    assert counts == sorted(set(counts))
    assert counts[-1] == result.usage.output


def test_reasoning_rules() -> None:
    assert [is_reasoning_model(m) for m in ("o1", "o3-mini", "o4-mini", "openai/gpt-5", "gpt-5-nano")] == [True] * 5
    assert [is_reasoning_model(m) for m in ("gpt-4o", "gpt-5-chat-latest", "llama3", "omni-x")] == [False] * 4
    assert reasoning_effort("minimal", "gpt-5") == "minimal"
    assert reasoning_effort("minimal", "o3") == "low"
    assert reasoning_effort("xhigh", "gpt-5") == "high"
    assert reasoning_effort("off", "gpt-5") is None
    assert reasoning_effort(None, "gpt-5") is None


def test_default_base_url_and_max_tokens_field() -> None:
    summarizer = OpenAISummarizer(SummarizerSettings(provider="openai", model="gpt-4.1"), KEY)
    assert summarizer.endpoint() == "https://api.openai.com/v1/chat/completions"
    assert summarizer.build_body(REQUEST)["max_completion_tokens"] == 4000


def test_usage_splits_cached_prompt_tokens() -> None:
    usage = openai_usage(
        {
            "prompt_tokens": 1000,
            "completion_tokens": 50,
            "total_tokens": 1050,
            "prompt_tokens_details": {"cached_tokens": 600},
        }
    )
    assert (usage.input, usage.cache_read, usage.output, usage.total_tokens) == (400, 600, 50, 1050)
    assert openai_usage({"prompt_tokens": None}).total_tokens == 0


def test_usage_reads_cache_write_tokens() -> None:
    usage = openai_usage(
        {
            "prompt_tokens": 5000,
            "completion_tokens": 70,
            "total_tokens": 5070,
            "prompt_tokens_details": {"cached_tokens": 3072, "cache_write_tokens": 1792},
        }
    )
    assert (usage.input, usage.cache_read, usage.cache_write, usage.output) == (136, 3072, 1792, 70)
    assert usage.total_tokens == 5070


@pytest.mark.parametrize(
    ("model", "explicit"),
    [
        ("gpt-5.6-sol", True), ("gpt-5.6", True), ("openai/gpt-6-luna", True), ("gpt-6.2-astra", True),
        ("gpt-daybreak-blue-latest", True), ("gpt-5.5", False), ("gpt-5", False), ("gpt-5.4-mini", False),
        ("gpt-4.1", False), ("o3", False), ("llama-3.1-8b", False), ("gpt-50x", False),
    ],
)
def test_explicit_cache_mode_only_for_gpt_5_6_and_later(model: str, explicit: bool) -> None:
    body = OpenAISummarizer(SummarizerSettings(provider="openai", model=model), KEY).build_body(REQUEST)
    assert body.get("prompt_cache_options") == ({"mode": "explicit"} if explicit else None)
    assert explicit_cache_mode(model) is explicit

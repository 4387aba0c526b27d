"""The Anthropic provider against the loopback server: body rules, streaming, usage, thinking, progress."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from tests.loopback_provider import LoopbackProvider, count_tokens, default_reply

from pi_sessiond.summarizers.anthropic import AnthropicSummarizer, anthropic_usage, thinking_plan
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings

KEY = "sk-ant-loopback-91b4c2"
REQUEST = SummaryRequest(
    system_prompt="You summarize.", prompt="<conversation>\n[User]: fix the bug\n</conversation>", max_tokens=4000
)


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        yield provider


def make(loopback: LoopbackProvider, **overrides: Any) -> AnthropicSummarizer:
    settings = SummarizerSettings(
        provider="anthropic",
        model="claude-haiku-4-5",
        base_url=loopback.base_url,
    )
    return AnthropicSummarizer(attrs.evolve(settings, **overrides), KEY)


async def test_streams_text_and_records_usage(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback)
    try:
        result = await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    (recorded,) = loopback.requests
    assert recorded.method == "POST" and recorded.path == "/v1/messages"
    assert recorded.headers["x-api-key"] == KEY
    assert recorded.headers["anthropic-version"] == "2023-06-01"
    assert recorded.headers["content-type"] == "application/json"
    expected = default_reply(recorded.body)
    assert result.text == expected
    prompt_tokens = count_tokens(REQUEST.system_prompt) + count_tokens(REQUEST.prompt)
    assert abs(result.usage.input - prompt_tokens) <= 2
    assert result.usage.output == count_tokens(expected)
    assert result.usage.total_tokens == result.usage.input + result.usage.output
    assert (result.usage.cache_read, result.usage.cache_write) == (0, 0)


async def test_body_has_no_cache_control_and_a_fresh_routing_id(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback, headers={"anthropic-beta": "none"})
    try:
        await summarizer.summarize(REQUEST)
        await summarizer.summarize(REQUEST)
    finally:
        await summarizer.aclose()
    first, second = (r.body for r in loopback.requests)
    for body in (first, second):
        assert "cache_control" not in json.dumps(body)
        assert body["system"] == REQUEST.system_prompt
        assert body["messages"] == [{"role": "user", "content": REQUEST.prompt}]
        assert body["stream"] is True and body["max_tokens"] == 4000 and "thinking" not in body
        assert len(body["metadata"]["user_id"]) == 32
    assert first["metadata"]["user_id"] != second["metadata"]["user_id"]
    assert loopback.requests[0].headers["anthropic-beta"] == "none"


@pytest.mark.parametrize(
    ("level", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 8192), ("high", 16384), ("xhigh", 32000)]
)
async def test_thinking_budget_per_level(level: str, budget: int, loopback: LoopbackProvider) -> None:
    counts: list[int] = []
    summarizer = make(loopback)
    try:
        result = await summarizer.summarize(
            SummaryRequest(system_prompt="s", prompt="p", max_tokens=40000, reasoning=level), progress=counts.append
        )
    finally:
        await summarizer.aclose()
    body = loopback.requests[0].body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert body["max_tokens"] == 40000  # the request's output limit holds thinking and answer
    assert result.text == default_reply(body)
    assert counts[-1] == result.usage.output >= count_tokens(result.text)


async def test_thinking_stays_within_the_output_limit(loopback: LoopbackProvider) -> None:
    summarizer = make(loopback)
    try:
        await summarizer.summarize(SummaryRequest(system_prompt="s", prompt="p", max_tokens=10000, reasoning="high"))
    finally:
        await summarizer.aclose()
    body = loopback.requests[0].body
    assert body["max_tokens"] == 10000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 10000 - 1024}


def test_thinking_plan() -> None:
    assert thinking_plan(None, 3000) == (3000, None)
    assert thinking_plan("off", 2000) == (2000, None)
    assert thinking_plan("medium", 32000) == (32000, 8192)
    assert thinking_plan("medium", 9000) == (9000, 8192)
    assert thinking_plan("medium", 8192) == (8192, 8192 - 1024)  # no room left above the budget
    assert thinking_plan("high", 9000) == (9000, 9000 - 1024)
    assert thinking_plan("low", 1500) == (1500, None)  # budget would fall below Anthropic's 1024 minimum


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


def test_usage_sums_every_kind() -> None:
    usage = anthropic_usage(
        {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 7}
    )
    assert (usage.input, usage.output, usage.cache_read, usage.cache_write, usage.total_tokens) == (10, 5, 100, 7, 122)


def test_default_base_url() -> None:
    summarizer = AnthropicSummarizer(SummarizerSettings(provider="anthropic", model="m"), None)
    assert summarizer.endpoint() == "https://api.anthropic.com/v1/messages"
    assert "x-api-key" not in summarizer.request_headers()

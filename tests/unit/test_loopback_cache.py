"""The loopback's prompt caches follow each API's billing rules (tests/loopback_cache.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from tests.loopback_cache import PromptCache, tokens
from tests.loopback_provider import LoopbackProvider

WORDS = "The parser splits the input into tokens and builds the tree. "  # 61 characters


def openai_body(turns: int, model: str = "gpt-4.1", **extra: Any) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for n in range(turns):
        messages.append({"role": "user", "content": f"Question {n}: " + WORDS * 40})
        messages.append({"role": "assistant", "content": f"Answer {n}: " + WORDS * 20})
    return {"model": model, "messages": messages, "stream": True, **extra}


def test_openai_small_prompts_are_never_cached() -> None:
    cache = PromptCache()
    body = openai_body(1)
    assert tokens("".join(m["content"] for m in body["messages"])) < 1024
    assert cache.openai(body).read == 0 and cache.openai(body).read == 0


def test_openai_reads_the_longest_prefix_in_whole_128_token_blocks() -> None:
    cache = PromptCache()
    first = cache.openai(openai_body(3))
    assert first.read == 0 and first.write == 0  # an older model stores for free
    second = cache.openai(openai_body(4))  # the same conversation, one turn longer
    assert second.read == first.prompt // 128 * 128 and second.read % 128 == 0
    assert 0.85 < second.read / first.prompt <= 1 and second.prompt > first.prompt


def test_openai_cache_expires_and_depends_on_model_and_tools() -> None:
    cache = PromptCache()
    cache.openai(openai_body(3))
    assert cache.openai(openai_body(3, tools=[{"type": "function", "function": {"name": "read"}}])).read == 0
    assert cache.openai(openai_body(3, model="gpt-4o")).read == 0
    cache.advance(299)
    assert cache.openai(openai_body(3)).read > 0  # a hit refreshes the entry
    cache.advance(301)
    assert cache.openai(openai_body(3)).read == 0


def test_openai_gpt_5_6_bills_writes_unless_explicit() -> None:
    cache = PromptCache()
    written = cache.openai(openai_body(3, model="gpt-5.6-sol"))
    assert written.write == written.prompt // 128 * 128 and written.read == 0
    again = cache.openai(openai_body(4, model="gpt-5.6-sol"))
    assert again.read == written.write and again.write == again.prompt // 128 * 128 - again.read
    explicit = PromptCache()
    body = openai_body(3, model="gpt-5.6-sol", prompt_cache_options={"mode": "explicit"})
    assert explicit.openai(body).write == 0 and explicit.openai(body).read == 0  # nothing was stored


def anthropic_body(turns: int, *, mark_last: bool = True, ttl: str | None = None, **extra: Any) -> dict[str, Any]:
    control: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    system = [{"type": "text", "text": "You are a coding agent. " * 300, "cache_control": control}]
    messages: list[dict[str, Any]] = []
    for n in range(turns + 1):  # each turn a question and its answer; the last question is unanswered
        if n:
            messages.append({"role": "assistant", "content": [{"type": "text", "text": f"Answer {n}: " + WORDS * 20}]})
        messages.append({"role": "user", "content": [{"type": "text", "text": f"Question {n}: " + WORDS * 40}]})
    if mark_last:
        messages[-1]["content"][-1]["cache_control"] = control
    tools = [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 1000, "system": system, "messages": messages,
            "tools": tools, **extra}


def test_anthropic_writes_at_breakpoints_then_reads_with_look_back() -> None:
    cache = PromptCache()
    first = cache.anthropic(anthropic_body(3))
    assert first.read == 0 and first.write == first.prompt  # both breakpoints written, up to the last block
    replay = anthropic_body(3)
    replay["messages"].append({"role": "user", "content": "Summarize the conversation."})
    second = cache.anthropic(replay)  # the same breakpoints, one message after them
    assert second.read == first.prompt and second.write == 0
    assert second.prompt - second.read == tokens("Summarize the conversation.")
    moved = cache.anthropic(anthropic_body(4))  # the last breakpoint moved two blocks on: found by look-back
    assert moved.read == first.prompt and moved.write == moved.prompt - first.prompt


def test_anthropic_look_back_is_20_blocks() -> None:
    cache = PromptCache()
    cache.anthropic(anthropic_body(2))
    far = cache.anthropic(anthropic_body(13))  # 22 blocks later: only the system breakpoint is found
    tools = tokens("read" + "Read a file")  # the schema holds only a "type", which is not text
    assert far.read == tools + tokens("You are a coding agent. " * 300)
    assert far.write == far.prompt - far.read
    near = PromptCache()
    near.anthropic(anthropic_body(2))
    assert near.anthropic(anthropic_body(12)).read > far.read  # 20 blocks later: still found


def test_anthropic_ttl_settings_and_minimum() -> None:
    cache = PromptCache()
    cache.anthropic(anthropic_body(3))
    cache.advance(301)
    assert cache.anthropic(anthropic_body(3)).read == 0
    hour = PromptCache()
    hour.anthropic(anthropic_body(3, ttl="1h"))
    hour.advance(3000)
    assert hour.anthropic(anthropic_body(3, ttl="1h")).read > 0
    changed = PromptCache()
    first = changed.anthropic(anthropic_body(3))
    other = changed.anthropic(anthropic_body(3, tool_choice={"type": "any"}))
    assert 0 < other.read < first.prompt  # tools and system stay cached, the messages do not
    small = PromptCache()
    body = anthropic_body(0)
    body["system"][0]["text"] = "Short."
    assert small.anthropic(body).write == 0 and small.anthropic(body).read == 0
    assert PromptCache().anthropic(anthropic_body(3, mark_last=False)).write > 0


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_the_server_reports_cache_usage_in_each_apis_fields(api: str) -> None:
    with LoopbackProvider() as loopback:
        if api == "openai":
            url, body, headers = "/v1/chat/completions", openai_body(3, stream=False), {}
        else:
            url, body = "/v1/messages", anthropic_body(3)
            headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        with httpx.Client(base_url=loopback.base_url) as client:
            client.post(url, json=body, headers=headers).raise_for_status()
            usage = client.post(url, json=body, headers=headers).json()["usage"]
        recorded = loopback.requests[-1].usage
    assert usage == recorded
    if api == "openai":
        assert usage["prompt_tokens_details"]["cached_tokens"] == usage["prompt_tokens"] // 128 * 128
    else:
        assert usage["cache_read_input_tokens"] > 0 and usage["input_tokens"] == 0
        assert usage["cache_creation_input_tokens"] == 0

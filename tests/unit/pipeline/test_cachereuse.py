"""The cache-reuse planner and the replayed body (pure)."""

from __future__ import annotations

import copy
from typing import Any

from pi_sessiond.pipeline.cachereuse import (
    AgentRequest,
    ReplaySource,
    body_api,
    cache_lifetime,
    cached_tokens,
    replay_instruction,
)
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.pricing import ModelPrice

NOW = 1_000_000.0
PRICE = ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75)
TEXT = "The parser splits the input into tokens. " * 100  # ~1000 tokens


def openai_body(turns: int = 20) -> dict[str, Any]:
    messages = [{"role": "system", "content": "You are a coding agent."}]
    messages += [{"role": "user" if n % 2 == 0 else "assistant", "content": TEXT} for n in range(turns)]
    return {"model": "m", "messages": messages, "stream": True, "stream_options": {"include_usage": True},
            "max_completion_tokens": 32000, "tools": [{"type": "function", "function": {"name": "read"}}]}


def anthropic_body(turns: int = 20, ttl: str | None = None) -> dict[str, Any]:
    control = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    messages = [{"role": "user" if n % 2 == 0 else "assistant", "content": [{"type": "text", "text": TEXT}]}
                for n in range(turns)]
    messages[-2]["content"][0]["cache_control"] = control
    return {"model": "m", "max_tokens": 32000, "system": [{"type": "text", "text": "Agent.", "cache_control": control}],
            "messages": messages, "thinking": {"type": "enabled", "budget_tokens": 4096}}


def source(body: dict[str, Any] | None, *, provider: str = "openai", model: str = "m", age: float = 10,
           window: int = 200_000, price: ModelPrice | None = PRICE) -> ReplaySource:
    agent = AgentRequest(provider=provider, model="m", body=body, sent_at=NOW - age) if body is not None else None
    return ReplaySource(agent=agent, provider=provider, model=model, window=window, price=price, now=NOW)


SERIALIZED = SummaryRequest(system_prompt="You summarize.", prompt="x" * 60_000, max_tokens=8000)


def test_a_warm_cache_replays_and_reports_its_estimate() -> None:
    plan = source(openai_body()).plan(SERIALIZED)
    assert plan.shape == "replay" and plan.priced
    assert plan.replay_cached_tokens % 128 == 0 and plan.replay_cached_tokens / plan.replay_tokens > 0.9
    assert plan.replay_cost is not None and plan.replay_cost < 0.5 * plan.serialized_cost
    assert plan.serialized_tokens == (len("You summarize.") + 60_000 + 3) // 4


def test_each_condition_refuses_replay_with_its_reason() -> None:
    cases = {
        "no recorded request": source(None),
        "the summarizer is not the agent's model": source(openai_body(), model="other"),
        "the recorded request is not in the summarizer's API": source(anthropic_body()),
        "the provider's cache has expired": source(openai_body(), age=301),
        "the replayed request does not fit the window": source(openai_body(), window=20_000),
        "the recorded request forces a tool call": source({**openai_body(), "tool_choice": "required"}),
    }
    for reason, planner in cases.items():
        plan = planner.plan(SERIALIZED)
        assert (plan.shape, plan.reason) == ("serialized", reason)
    small = SummaryRequest(system_prompt="You summarize.", prompt="x" * 400, max_tokens=8000)
    body = openai_body(turns=1)
    body["messages"][1]["content"] = TEXT[:2000]  # ~500 tokens: under 1,024, nothing was cached
    uncached = source(body).plan(small)
    assert uncached.replay_cached_tokens == 0
    assert (uncached.shape, uncached.reason) == ("serialized", "replay is not cheaper (cold or small cache)")
    named = {**anthropic_body(), "tool_choice": {"type": "tool", "name": "read"}}
    assert source(named, provider="anthropic").plan(SERIALIZED).reason == "the recorded request forces a tool call"
    assert source({**openai_body(), "tool_choice": "auto"}).plan(SERIALIZED).shape == "replay"
    responses = {"model": "m", "input": [{"role": "user", "content": "hi"}]}
    assert source(responses).plan(SERIALIZED).reason == "the recorded request is not in the summarizer's API"


def test_anthropic_lifetime_and_breakpoint_prefix() -> None:
    assert cache_lifetime("anthropic", anthropic_body()) == 300
    assert cache_lifetime("anthropic", anthropic_body(ttl="1h")) == 3600
    assert source(anthropic_body(ttl="1h"), provider="anthropic", age=3000).plan(SERIALIZED).shape == "replay"
    assert source(anthropic_body(), provider="anthropic", age=301).plan(SERIALIZED).shape == "serialized"
    body = anthropic_body()
    assert body_api(body) == "anthropic" and body_api(openai_body()) == "openai"
    whole = cached_tokens("anthropic", body)
    assert 0 < whole < sum(len(TEXT) for _ in range(20)) // 4  # up to the breakpoint, not the last message


def test_unpriced_estimates_weigh_tokens_as_billed() -> None:
    plan = source(openai_body(), price=None).plan(SERIALIZED)
    assert not plan.priced and plan.serialized_cost == plan.serialized_tokens / 1e6
    assert plan.shape == "replay"


def test_the_replayed_body_adds_one_message_and_keeps_what_the_cache_depends_on() -> None:
    for provider, body in (("openai", openai_body()), ("anthropic", anthropic_body())):
        original = copy.deepcopy(body)
        planner = source(body, provider=provider, window=60_000)
        plan = planner.plan(SERIALIZED)
        replayed = planner.body(SERIALIZED, plan, "focus on the parser")
        assert body == original  # the recorded body is not changed
        assert replayed["messages"][:-1] == body["messages"]
        for key in ("model", "tools", "system", "thinking", "tool_choice"):
            assert replayed.get(key) == body.get(key)
        last = replayed["messages"][-1]
        text = last["content"] if provider == "openai" else last["content"][0]["text"]
        assert last["role"] == "user" and text == replay_instruction("focus on the parser")
        limit = replayed["max_completion_tokens" if provider == "openai" else "max_tokens"]
        assert 4096 <= limit <= 60_000 - plan.replay_tokens and replayed["stream"] is True

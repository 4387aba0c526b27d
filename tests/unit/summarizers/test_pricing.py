"""Prices applied to usage: per-kind cost, the total, the price table shapes."""

from __future__ import annotations

import pytest

from pi_protocol import Usage
from pi_sessiond.summarizers.pricing import ModelPrice, builtin_price, cost_of, price_from, priced


def test_cost_is_each_kind_at_its_price() -> None:
    usage = Usage(input=2_000, output=1_000, cache_read=100_000, cache_write=4_000, total_tokens=107_000)
    cost = cost_of(usage, ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25))
    assert cost.input == pytest.approx(0.01) and cost.output == pytest.approx(0.025)
    assert cost.cache_read == pytest.approx(0.05) and cost.cache_write == pytest.approx(0.025)
    assert cost.total == pytest.approx(0.11)


def test_unknown_price_keeps_the_usage() -> None:
    usage = Usage(input=10, output=5, total_tokens=15)
    assert priced(usage, None) is usage
    assert priced(usage, ModelPrice(input=1_000_000, output=0)).cost.total == pytest.approx(10)


def test_price_shapes() -> None:
    assert price_from({"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}) == ModelPrice(
        input=3, output=15, cache_read=0.3, cache_write=3.75
    )
    assert price_from({"input": 1, "output": 2}) == ModelPrice(input=1, output=2)
    for bad in (None, [], {"input": "3", "output": 15}, {"input": 3}, {"input": -1, "output": 2}, {"input": True,
                                                                                                     "output": 1}):
        assert price_from(bad) is None


def test_builtin_prices_by_longest_prefix() -> None:
    assert builtin_price("claude-opus-4-5-20251101") == ModelPrice(input=5, output=25, cache_read=0.5,
                                                                   cache_write=6.25)
    assert builtin_price("anthropic/claude-sonnet-4-5") == builtin_price("claude-sonnet-4-6")
    assert builtin_price("gpt-5.2-codex") != builtin_price("gpt-5")
    assert builtin_price("loopback") is None

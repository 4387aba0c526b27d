"""What a request costs: a model's prices applied to the usage a provider reported.

Rules:

- Prices are dollars per million tokens, one for each kind of token:
  uncached input, output, cache reads and cache writes.
- ``cost`` of a usage is each count times its price, and ``total`` their sum;
  a usage whose model has no known price keeps its zero cost.
- :func:`price_from` reads a price from JSON in the shape of Pi's
  ``models.json`` ``cost`` object and ``summarizer.prices`` values
  (``{input, output, cacheRead, cacheWrite}``); anything else gives ``None``.
- :data:`BUILTIN_PRICES` holds the prices of a few common models (Pi 1.6.0's
  model registry), by longest model-id prefix.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from pi_protocol import Cost, Usage

PER_TOKEN = 1 / 1_000_000


@attrs.frozen(kw_only=True)
class ModelPrice:
    """Dollars per million tokens of each kind."""

    input: float
    output: float
    cache_read: float = 0.0
    cache_write: float = 0.0


BUILTIN_PRICES: dict[str, ModelPrice] = {
    "claude-opus-4-5": ModelPrice(input=5, output=25, cache_read=0.5, cache_write=6.25),
    "claude-sonnet-4": ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75),
    "claude-haiku-4-5": ModelPrice(input=1, output=5, cache_read=0.1, cache_write=1.25),
    "gpt-5": ModelPrice(input=1.25, output=10, cache_read=0.125),
    "gpt-5.2": ModelPrice(input=1.75, output=14, cache_read=0.175),
    "gpt-5.4": ModelPrice(input=2.5, output=15, cache_read=0.25),
    "gpt-5.5": ModelPrice(input=5, output=30, cache_read=0.5),
    "gpt-5.6-sol": ModelPrice(input=4, output=20, cache_read=0.4, cache_write=5),
    "gpt-5.6-terra": ModelPrice(input=2, output=12, cache_read=0.2, cache_write=2.5),
    "gpt-4.1": ModelPrice(input=2, output=8, cache_read=0.5),
    "gpt-4o": ModelPrice(input=2.5, output=10, cache_read=1.25),
}


def _number(value: Any) -> float | None:
    if isinstance(value, int | float) and not isinstance(value, bool) and value >= 0:
        return float(value)
    return None


def price_from(value: Any) -> ModelPrice | None:
    """A price from ``{input, output, cacheRead?, cacheWrite?}``; ``None`` unless input and output are numbers."""
    if not isinstance(value, Mapping):
        return None
    base, out = _number(value.get("input")), _number(value.get("output"))
    if base is None or out is None:
        return None
    return ModelPrice(input=base, output=out, cache_read=_number(value.get("cacheRead")) or 0.0,
                      cache_write=_number(value.get("cacheWrite")) or 0.0)


def builtin_price(model_id: str) -> ModelPrice | None:
    """The built-in price of ``model_id`` (longest prefix of its last path segment), or ``None``."""
    name = model_id.rsplit("/", 1)[-1].lower()
    best = max((p for p in BUILTIN_PRICES if name.startswith(p)), key=len, default="")
    return BUILTIN_PRICES[best] if best else None


def cost_of(usage: Usage, price: ModelPrice) -> Cost:
    """What ``usage`` costs at ``price``."""
    cost = Cost(
        input=usage.input * price.input * PER_TOKEN,
        output=usage.output * price.output * PER_TOKEN,
        cache_read=usage.cache_read * price.cache_read * PER_TOKEN,
        cache_write=usage.cache_write * price.cache_write * PER_TOKEN,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost


def priced(usage: Usage, price: ModelPrice | None) -> Usage:
    """``usage`` with its cost filled in at ``price`` (unchanged without one)."""
    if price is None:
        return usage
    return attrs.evolve(usage, cost=cost_of(usage, price))

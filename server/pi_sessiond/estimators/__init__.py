"""Token estimators behind one Protocol, picked by name (``settings.tokenizer``).

* ``pi`` (default): Pi 0.73.1's ``ceil(chars / 4)`` estimate, exactly
  ``compaction.tokens.estimate_tokens``; parity is measured in it.
* ``cl100k``: tiktoken's cl100k_base on the same text (see :mod:`.cl100k`).
* ``calibrated``: Pi's estimate scaled by a ratio and a per-message overhead
  fitted on the session's own usage numbers (see :mod:`.calibrated`).

Contract of :func:`get_estimator`: the returned estimator's ``name`` says what
it really computes. ``cl100k`` without a usable BPE file, and ``calibrated``
without enough data to fit, return the ``pi`` estimator (the first logs one
warning on the ``pi_sessiond.estimators`` logger).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, get_args

import attrs

from pi_protocol.base import JsonDict
from pi_protocol.settings import Tokenizer
from pi_sessiond.compaction.tokens import ContextTokenEstimate, estimate_context_tokens, estimate_tokens
from pi_sessiond.estimators import cl100k
from pi_sessiond.estimators.calibrated import Calibration, fit
from pi_sessiond.estimators.calibrated import estimate_context_tokens as calibrated_context_tokens

ESTIMATOR_NAMES: tuple[str, ...] = get_args(Tokenizer)


class Estimator(Protocol):
    """Tokens of one Pi message (a JSON dict); never raises on malformed input."""

    @property
    def name(self) -> str:
        """Which estimator this is: one of :data:`ESTIMATOR_NAMES`."""
        ...

    def estimate(self, message: JsonDict) -> int:
        """Estimated tokens of ``message``."""
        ...


@attrs.frozen
class PiEstimator:
    """Pi's estimator, exactly."""

    name: str = "pi"

    def estimate(self, message: JsonDict) -> int:
        """``ceil(chars / 4)`` as Pi 0.73.1 counts chars."""
        return estimate_tokens(message)


@attrs.frozen
class Cl100kEstimator:
    """cl100k_base tokens of the text Pi's estimator counts."""

    name: str = "cl100k"

    def estimate(self, message: JsonDict) -> int:
        """cl100k tokens (Pi's estimate if the encoding became unavailable)."""
        return cl100k.count_message_tokens(message)


@attrs.frozen
class CalibratedEstimator:
    """Pi's estimate times ``calibration.ratio`` plus ``calibration.overhead``."""

    calibration: Calibration
    name: str = "calibrated"

    def estimate(self, message: JsonDict) -> int:
        """The calibrated estimate of one message, rounded."""
        return self.calibration.estimate_message(message)


def get_estimator(name: str = "pi", *, messages: Sequence[JsonDict | None] | None = None) -> Estimator:
    """The estimator called ``name``; ``messages`` are what ``calibrated`` fits on.

    Raises ``ValueError`` naming the valid names for an unknown ``name``.
    """
    if name == "pi":
        return PiEstimator()
    if name == "cl100k":
        return Cl100kEstimator() if cl100k.available() else PiEstimator()
    if name == "calibrated":
        calibration = fit(messages or [])
        if calibration.ratio == 1.0 and calibration.overhead == 0.0:
            return PiEstimator()
        return CalibratedEstimator(calibration)
    raise ValueError(f"unknown estimator {name!r}; valid names: {', '.join(ESTIMATOR_NAMES)}")


def context_tokens(messages: Sequence[JsonDict], name: str = "pi") -> ContextTokenEstimate:
    """The context size by the estimator ``name`` (``settings.tokenizer``).

    ``pi`` is exactly Pi's ``estimateContextTokens`` (the default, and what
    parity is measured in). The others keep its shape — the last valid usage is
    the provider's true count — and only change how the messages after it are
    estimated; ``calibrated`` fits on ``messages`` themselves.
    """
    if name == "pi":
        return estimate_context_tokens(messages)
    estimator = get_estimator(name, messages=messages)
    if isinstance(estimator, CalibratedEstimator):
        return calibrated_context_tokens(messages, estimator.calibration)
    base = estimate_context_tokens(messages)
    start = 0 if base.last_usage_index is None else base.last_usage_index + 1
    trailing = sum(estimator.estimate(m) for m in messages[start:])
    return ContextTokenEstimate(base.usage_tokens + trailing, base.usage_tokens, trailing, base.last_usage_index)


__all__ = [
    "ESTIMATOR_NAMES",
    "CalibratedEstimator",
    "Calibration",
    "Cl100kEstimator",
    "Estimator",
    "PiEstimator",
    "context_tokens",
    "fit",
    "get_estimator",
]

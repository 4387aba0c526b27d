"""A token estimator calibrated on the session's own ``usage`` numbers.

Every assistant message records what the provider really counted. The prompt
that produced assistant message ``A`` had ``prompt(A) = input + cacheRead +
cacheWrite`` tokens (``usage.output`` is ``A``'s own answer, which was not part
of that prompt). Pi's ``calculateContextTokens`` uses ``totalTokens`` (or the
sum of all four parts), i.e. the prompt *plus* that answer, because after the
answer the answer is part of the context.

Samples. For two consecutive *usable* assistant messages ``A_i`` and ``A_j``
of the same ``provider/model`` on one path, ``prompt(A_j) - prompt(A_i)`` is
the real token size of the messages ``A_i .. A_j-1`` (``A_i`` itself, then
every tool result, user, bash, summary or unusable assistant message up to
``A_j``). One sample is ``(real growth, Pi's estimate of those messages, their
count)``. Rules:

* usable = valid usage by Pi's rule (assistant, ``usage`` present,
  ``stopReason`` not ``aborted``/``error``) *and* a non-zero prompt; unusable
  assistants still count among the messages of a segment;
* a pair whose prompt shrank (a compaction happened in between) or that
  crosses a ``compaction`` entry of a session file is skipped;
* a pair whose two ends have different ``provider/model`` keys is skipped (a
  different tokenizer counted each end); the sample's key is that shared key.

Fit. Per key, ``real ≈ ratio * estimated + overhead * count`` by least
squares with both coefficients non-negative (the unconstrained solution, else
the better of the two one-coefficient fits). With fewer than
:data:`MIN_SAMPLES` samples, a degenerate system, or a ratio outside
:data:`RATIO_BOUNDS`, the result is ``ratio 1, overhead 0``: exactly Pi's
estimate. Everything here is pure except :func:`load_messages`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.tokens import (
    ContextTokenEstimate,
    assistant_usage,
    calculate_context_tokens,
    estimate_tokens,
)
from pi_sessiond.store.kinds import entry_messages
from pi_sessiond.store.session import Session

# ``None`` in a message stream marks a compaction boundary.
Stream = Sequence[JsonDict | None]

MIN_SAMPLES = 8
RATIO_BOUNDS = (0.25, 4.0)
_PROMPT_PARTS = ("input", "cacheRead", "cacheWrite")


@attrs.frozen
class Sample:
    """Real prompt growth between two usable assistants and Pi's estimate of it.

    ``start``/``end`` index the stream: the segment is ``stream[start:end]``
    without its ``None`` markers, so other estimators can be evaluated on it.
    """

    real: int
    estimated: int
    count: int
    key: str
    start: int
    end: int


@attrs.frozen
class Calibration:
    """``ratio * Pi's estimate + overhead`` per message, for one ``provider/model``.

    The default (``ratio 1, overhead 0``) reproduces Pi's estimator exactly.
    """

    ratio: float = 1.0
    overhead: float = 0.0
    samples: int = 0
    key: str | None = None

    def estimate_message(self, message: JsonDict) -> int:
        """Calibrated tokens of one message (rounded to the nearest integer)."""
        return round(self.ratio * estimate_tokens(message) + self.overhead)

    def estimate(self, messages: Iterable[JsonDict]) -> int:
        """Calibrated tokens of ``messages`` (rounded once, after summing)."""
        estimated = 0
        count = 0
        for message in messages:
            estimated += estimate_tokens(message)
            count += 1
        return round(self.ratio * estimated + self.overhead * count)


def model_key(message: JsonDict) -> str:
    """``provider/model`` of a message (``?`` for a missing part)."""
    provider = message.get("provider")
    model = message.get("model")
    return f"{provider if isinstance(provider, str) else '?'}/{model if isinstance(model, str) else '?'}"


def prompt_tokens(message: JsonDict) -> int:
    """``input + cacheRead + cacheWrite`` of a usable assistant, else 0."""
    usage = assistant_usage(message)
    if usage is None:
        return 0
    total = 0
    for part in _PROMPT_PARTS:
        value = usage.get(part)
        if isinstance(value, int | float) and not isinstance(value, bool):
            total += int(value)
    return total


def load_messages(path: Path) -> list[JsonDict | None]:
    """The messages on a session file's current path, ``None`` at each compaction."""
    stream: list[JsonDict | None] = []
    for entry in Session.open(path).path_to():
        if entry.type == "compaction":
            stream.append(None)
        elif entry.type == "message":
            if entry.message is not None:
                stream.append(entry.message)
        else:
            stream.extend(entry_messages(entry))
    return stream


def collect_samples(stream: Stream) -> list[Sample]:
    """Samples of a message stream, in order (rules in the module docstring)."""
    samples: list[Sample] = []
    anchor: tuple[int, JsonDict, int] | None = None  # (index, message, prompt)
    for index, message in enumerate(stream):
        if message is None:
            anchor = None
            continue
        prompt = prompt_tokens(message)
        if prompt <= 0:
            continue
        if anchor is not None:
            sample = _sample(stream, anchor, index, message, prompt)
            if sample is not None:
                samples.append(sample)
        anchor = (index, message, prompt)
    return samples


def _sample(stream: Stream, anchor: tuple[int, JsonDict, int], index: int, end: JsonDict, prompt: int) -> Sample | None:
    start, first, first_prompt = anchor
    key = model_key(end)
    if prompt < first_prompt or model_key(first) != key:
        return None
    segment = [m for m in stream[start:index] if m is not None]
    estimated = sum(estimate_tokens(m) for m in segment)
    return Sample(prompt - first_prompt, estimated, len(segment), key, start, index)


def fit_samples(samples: Sequence[Sample], key: str | None = None) -> Calibration:
    """Non-negative least squares of ``real ≈ ratio * estimated + overhead * count``.

    Falls back to ``Calibration(1, 0)`` (Pi's estimate) when the data are too
    few or the fit is not sane; ``samples`` of the result counts the input.
    """
    n = len(samples)
    if n < MIN_SAMPLES:
        return Calibration(samples=n, key=key)
    sxx = sum(s.estimated * s.estimated for s in samples)
    sxc = sum(s.estimated * s.count for s in samples)
    scc = sum(s.count * s.count for s in samples)
    sxy = sum(s.estimated * s.real for s in samples)
    scy = sum(s.count * s.real for s in samples)
    ratio, overhead = _nnls2(float(sxx), float(sxc), float(scc), float(sxy), float(scy))
    if not RATIO_BOUNDS[0] <= ratio <= RATIO_BOUNDS[1]:
        return Calibration(samples=n, key=key)
    return Calibration(ratio=ratio, overhead=overhead, samples=n, key=key)


def _nnls2(sxx: float, sxc: float, scc: float, sxy: float, scy: float) -> tuple[float, float]:
    """Minimise ``|y - r x - o c|²`` over ``r, o >= 0`` from the normal-equation sums."""
    det = sxx * scc - sxc * sxc
    if det > 1e-9 * max(sxx * scc, 1.0):
        ratio = (sxy * scc - scy * sxc) / det
        overhead = (scy * sxx - sxy * sxc) / det
        if ratio >= 0 and overhead >= 0:
            return ratio, overhead
    # Best fit on an edge: only the ratio, or only the overhead. Comparing the
    # residuals reduces to comparing the explained sums of squares.
    ratio_only = max(sxy, 0.0) / sxx if sxx > 0 else 0.0
    overhead_only = max(scy, 0.0) / scc if scc > 0 else 0.0
    if ratio_only * sxy >= overhead_only * scy:
        return ratio_only, 0.0
    return 0.0, overhead_only


def fit_all(messages_or_path: Stream | Path) -> dict[str, Calibration]:
    """One calibration per ``provider/model`` key found in the samples."""
    stream = load_messages(messages_or_path) if isinstance(messages_or_path, Path) else messages_or_path
    by_key: dict[str, list[Sample]] = {}
    for sample in collect_samples(stream):
        by_key.setdefault(sample.key, []).append(sample)
    return {key: fit_samples(samples, key) for key, samples in by_key.items()}


def fit(messages_or_path: Stream | Path, key: str | None = None) -> Calibration:
    """The calibration for ``key`` (default: the last usable assistant's model).

    ``messages_or_path`` is a list of Pi message dicts (``None`` items mark a
    compaction) or the path of a session file (its current path is read).
    Returns Pi's estimate (``ratio 1, overhead 0``) when there is no data.
    """
    stream = load_messages(messages_or_path) if isinstance(messages_or_path, Path) else messages_or_path
    if key is None:
        key = _last_key(stream)
    samples = [s for s in collect_samples(stream) if s.key == key]
    return fit_samples(samples, key)


def _last_key(stream: Stream) -> str | None:
    for message in reversed(stream):
        if message is not None and prompt_tokens(message) > 0:
            return model_key(message)
    return None


def estimate_context_tokens(messages: Sequence[JsonDict], calibration: Calibration) -> ContextTokenEstimate:
    """Like Pi's ``estimateContextTokens``, with a calibrated trailing estimate.

    With a usable assistant at index ``i``: its prompt tokens plus the
    calibrated estimate of ``messages[i:]`` (the growth the fit measures starts
    at that assistant). ``usage_tokens`` is Pi's ``calculateContextTokens`` of
    that usage, and ``trailing_tokens`` is ``tokens - usage_tokens``. Without
    one: the calibrated estimate of every message.
    """
    for index in range(len(messages) - 1, -1, -1):
        prompt = prompt_tokens(messages[index])
        if prompt > 0:
            usage = assistant_usage(messages[index])
            usage_tokens = calculate_context_tokens(usage) if usage is not None else prompt
            tokens = prompt + calibration.estimate(messages[index:])
            return ContextTokenEstimate(tokens, usage_tokens, tokens - usage_tokens, index)
    estimated = calibration.estimate(messages)
    return ContextTokenEstimate(estimated, 0, estimated, None)

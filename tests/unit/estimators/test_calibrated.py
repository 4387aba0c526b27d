"""The calibrated estimator: samples from usage, the non-negative fit, fallbacks."""

from __future__ import annotations

import random
import statistics
from pathlib import Path

import attrs
import pytest
from tests.unit.compaction.builders import assistant_msg, tool_result_msg, usage, user_msg

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.tokens import calculate_context_tokens, estimate_tokens
from pi_sessiond.estimators.calibrated import (
    MIN_SAMPLES,
    Calibration,
    Sample,
    collect_samples,
    estimate_context_tokens,
    fit,
    fit_all,
    fit_samples,
    load_messages,
    prompt_tokens,
)


def _assistant(prompt: int, *, text: str = "ok", model: str = "claude-test", stop: str = "toolUse") -> JsonDict:
    message = assistant_msg(text, stop=stop, use=usage(prompt + 10, cacheRead=prompt - 3, input=3, output=10))
    message["model"] = model
    return message


def synthetic_stream(ratio: float, overhead: float, turns: int = 40, seed: int = 1) -> list[JsonDict | None]:
    """A session whose real growth is exactly ``ratio * Pi's estimate + overhead`` per message."""
    rng = random.Random(seed)
    prompt = 5000
    stream: list[JsonDict | None] = [user_msg("x" * 400)]
    pending = 0.0
    for _ in range(turns):
        prompt += round(pending)
        assistant = _assistant(prompt, text="y" * rng.randrange(4, 800))
        segment: list[JsonDict] = [assistant]
        segment += [tool_result_msg("z" * rng.randrange(4, 4000)) for _ in range(rng.randrange(1, 4))]
        pending = sum(ratio * estimate_tokens(m) + overhead for m in segment)
        stream += segment
    return stream


def test_fit_recovers_a_known_ratio_and_overhead() -> None:
    calibration = fit(synthetic_stream(ratio=1.2, overhead=40.0))
    assert calibration.key == "anthropic/claude-test"
    assert calibration.samples == 39
    assert calibration.ratio == pytest.approx(1.2, abs=0.005)
    assert calibration.overhead == pytest.approx(40.0, abs=1.0)


def test_a_negative_overhead_is_clamped_to_zero() -> None:
    calibration = fit(synthetic_stream(ratio=1.5, overhead=-30.0))
    assert calibration.overhead == 0.0
    assert 1.0 < calibration.ratio < 1.5


def test_too_few_samples_is_exactly_pi() -> None:
    stream = synthetic_stream(ratio=2.0, overhead=50.0, turns=MIN_SAMPLES)  # MIN_SAMPLES - 1 pairs
    calibration = fit(stream)
    assert (calibration.ratio, calibration.overhead, calibration.samples) == (1.0, 0.0, MIN_SAMPLES - 1)
    messages = [m for m in stream if m is not None]
    assert calibration.estimate(messages) == sum(estimate_tokens(m) for m in messages)
    assert all(calibration.estimate_message(m) == estimate_tokens(m) for m in messages)
    assert fit([]) == Calibration()


def test_an_insane_ratio_falls_back_to_pi() -> None:
    samples = [Sample(real=100 * i, estimated=i, count=0, key="k", start=0, end=0) for i in range(1, 20)]
    assert fit_samples(samples, "k") == Calibration(samples=19, key="k")


def test_samples_measure_prompt_growth_from_the_previous_assistant() -> None:
    a1 = _assistant(1000)
    tool = tool_result_msg("t" * 40)
    a2 = _assistant(1300)
    samples = collect_samples([user_msg("u"), a1, tool, a2])
    assert samples == [Sample(300, estimate_tokens(a1) + estimate_tokens(tool), 2, "anthropic/claude-test", 1, 3)]
    assert prompt_tokens(a2) == 1300  # input + cacheRead + cacheWrite, not output
    assert calculate_context_tokens(a2["usage"]) == 1310


def test_unusable_assistants_are_counted_but_never_anchor() -> None:
    a1 = _assistant(1000)
    aborted = _assistant(5000, stop="aborted")
    errored = _assistant(5000, stop="error")
    zero = assistant_msg("z", use=usage())
    a2 = _assistant(1500)
    samples = collect_samples([a1, aborted, errored, zero, a2])
    assert len(samples) == 1
    assert samples[0].real == 500 and samples[0].count == 4


def test_shrinking_context_compaction_marker_and_model_change_are_skipped() -> None:
    shrink = [_assistant(9000), user_msg("u"), _assistant(2000), user_msg("v"), _assistant(2100)]
    assert [s.real for s in collect_samples(shrink)] == [100]
    marker = [_assistant(1000), None, user_msg("u"), _assistant(1200), _assistant(1300)]
    assert [(s.real, s.start, s.end) for s in collect_samples(marker)] == [(100, 3, 4)]
    switch = [_assistant(1000), _assistant(1100, model="other"), _assistant(1200, model="other")]
    assert [(s.real, s.key) for s in collect_samples(switch)] == [(100, "anthropic/other")]


def test_fit_all_keeps_models_apart() -> None:
    first = synthetic_stream(ratio=1.1, overhead=10.0)
    second = synthetic_stream(ratio=1.6, overhead=5.0, seed=2)
    for message in second:
        if message is not None and message["role"] == "assistant":
            message["model"] = "other"
    calibrations = fit_all([*first, None, *second])
    assert set(calibrations) == {"anthropic/claude-test", "anthropic/other"}
    assert calibrations["anthropic/claude-test"].ratio == pytest.approx(1.1, abs=0.01)
    assert calibrations["anthropic/other"].ratio == pytest.approx(1.6, abs=0.01)
    assert fit([*first, None, *second]).key == "anthropic/other"  # the last model by default
    assert fit([*first, None, *second], key="anthropic/claude-test").ratio == pytest.approx(1.1, abs=0.01)


def test_calibration_is_frozen() -> None:
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        Calibration().ratio = 2.0  # type: ignore[misc]


def test_context_estimate_uses_the_last_prompt_plus_calibrated_tail() -> None:
    calibration = Calibration(ratio=2.0, overhead=10.0, samples=20, key="k")
    last = _assistant(1000, text="a" * 40)  # Pi: 10 tokens
    tail = user_msg("b" * 80)  # Pi: 20 tokens
    result = estimate_context_tokens([user_msg("x"), last, tail, _assistant(0, stop="aborted")], calibration)
    aborted_tokens = round(2.0 * estimate_tokens(assistant_msg("ok")) + 10)
    assert result.last_usage_index == 1
    assert result.tokens == 1000 + (2 * 10 + 10) + (2 * 20 + 10) + aborted_tokens
    assert result.usage_tokens == 1010
    assert result.trailing_tokens == result.tokens - 1010
    empty = estimate_context_tokens([tail], calibration)
    assert (empty.tokens, empty.usage_tokens, empty.last_usage_index) == (50, 0, None)


def test_real_fixture_fit_meets_the_accuracy_targets(real_session: Path) -> None:
    stream = load_messages(real_session)
    assert stream.count(None) == 2  # the fixture's two compactions
    samples = collect_samples(stream)
    half = len(samples) // 2
    calibration = fit_samples(samples[:half], samples[0].key)
    assert calibration.key == "anthropic/claude-opus-4-5"
    assert calibration.ratio > 1.0 and calibration.overhead > 0.0
    test = samples[half:]

    def predicted(sample: Sample) -> float:
        return calibration.ratio * sample.estimated + calibration.overhead * sample.count

    errors = [abs(predicted(s) - s.real) / s.real for s in test if s.real > 0]
    total = sum(predicted(s) for s in test) / sum(s.real for s in test) - 1
    assert statistics.median(errors) <= 0.10
    assert abs(total) <= 0.05
    pi_errors = [abs(s.estimated - s.real) / s.real for s in test if s.real > 0]
    assert statistics.median(pi_errors) > 0.25  # the gap the calibration closes


def test_fit_accepts_a_session_path(real_session: Path) -> None:
    calibration = fit(real_session)
    assert calibration.key == "anthropic/claude-opus-4-5"
    assert calibration.samples == len(collect_samples(load_messages(real_session)))

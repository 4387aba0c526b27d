"""get_estimator: the pi default, cl100k, calibrated, fallbacks and unknown names."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.unit.compaction.builders import tool_result_msg, user_msg
from tests.unit.estimators.test_calibrated import synthetic_stream

from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.estimators import (
    ESTIMATOR_NAMES,
    CalibratedEstimator,
    Estimator,
    PiEstimator,
    cl100k,
    get_estimator,
)
from pi_sessiond.store.session import Session


@pytest.fixture(autouse=True)
def _fresh_loader() -> Iterator[None]:
    cl100k.reset()
    yield
    cl100k.reset()


def test_default_is_pi_exactly(real_session: Path) -> None:
    estimator: Estimator = get_estimator()
    assert estimator.name == "pi" and estimator == get_estimator("pi")
    messages = Session.open(real_session).context().messages
    assert [estimator.estimate(m) for m in messages] == [estimate_tokens(m) for m in messages]


def test_cl100k_by_name() -> None:
    estimator = get_estimator("cl100k")
    assert estimator.name == "cl100k"
    assert estimator.estimate(user_msg("hello world")) == 2


def test_cl100k_unavailable_gives_pi_and_warns_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "cl100k_base.tiktoken"
    shutil.copyfile(cl100k.shipped_bpe_path(), broken)
    broken.write_bytes(broken.read_bytes()[:-10])
    cl100k.reset(broken)
    with caplog.at_level(logging.WARNING, logger="pi_sessiond.estimators"):
        first, second = get_estimator("cl100k"), get_estimator("cl100k")
    assert first == second == PiEstimator()
    assert len([r for r in caplog.records if r.name == "pi_sessiond.estimators"]) == 1


def test_calibrated_without_data_is_pi() -> None:
    assert get_estimator("calibrated") == PiEstimator()
    assert get_estimator("calibrated", messages=[user_msg("hi")]) == PiEstimator()


def test_calibrated_fits_on_the_given_messages() -> None:
    estimator = get_estimator("calibrated", messages=synthetic_stream(ratio=1.5, overhead=20.0))
    assert isinstance(estimator, CalibratedEstimator) and estimator.name == "calibrated"
    message = tool_result_msg("x" * 400)  # Pi: 100 tokens
    assert estimator.estimate(message) == pytest.approx(1.5 * estimate_tokens(message) + 20, abs=2)


def test_calibrated_on_the_real_fixture(real_session: Path) -> None:
    from pi_sessiond.estimators.calibrated import load_messages

    estimator = get_estimator("calibrated", messages=load_messages(real_session))
    assert isinstance(estimator, CalibratedEstimator)
    assert estimator.calibration.key == "anthropic/claude-opus-4-5"


def test_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError) as excinfo:
        get_estimator("gpt2")
    message = str(excinfo.value)
    assert "'gpt2'" in message
    assert all(name in message for name in ESTIMATOR_NAMES)

"""Fixtures for the Pi parity tier (``pi16``: Pi 1.6.0, the target; ``pi``: Pi 0.73.1).

Without node, the npm package or the shared fixture these tests skip locally,
but under ``CI=true`` they fail instead: CI must never silently skip parity.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.parity.oracle import PI16, PiOracle, node24, oracle_available

PI_FIXTURES = Path(__file__).parents[2].parent / "shared" / "fixtures" / "pi"


def skip_or_fail(reason: str) -> None:
    """Skip the test, or fail it when running in CI (``CI=true``)."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"parity prerequisite missing in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def pi() -> Iterator[PiOracle]:
    """A running Pi 0.73.1 oracle shared by the whole test session."""
    reason = oracle_available()
    if reason is not None:
        skip_or_fail(reason)
    with PiOracle() as oracle:
        yield oracle


@pytest.fixture(scope="session")
def pi16() -> Iterator[PiOracle]:
    """A running Pi 1.6.0 oracle shared by the whole test session."""
    reason = oracle_available(PI16)
    if reason is not None:
        skip_or_fail(reason)
    with PiOracle(version=PI16) as oracle:
        yield oracle


@pytest.fixture(scope="session")
def pi16_agent() -> Iterator[PiOracle]:
    """The Pi 1.6.0 oracle on Node 24, for the ops that load Pi's agent modules (Node >= 22.19)."""
    reason = oracle_available(PI16)
    node = node24()
    if node is None:
        reason = reason or "Node 24 is not installed; run `scripts/install-tools.sh node24`"
    if reason is not None or node is None:
        skip_or_fail(reason or "Node 24 missing")
        return
    with PiOracle(version=PI16, node=node) as oracle:
        yield oracle


@pytest.fixture(scope="session")
def pi_fixture_path() -> Path:
    """Pi's ``before-compaction.jsonl`` (v1 format, 1 002 entries, 2 compactions)."""
    path = PI_FIXTURES / "before-compaction.jsonl"
    if not path.is_file():
        skip_or_fail(f"Pi fixture not found: {path}")
    return path

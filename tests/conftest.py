"""Shared fixtures: the real Pi session fixture from ../shared and small builders."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings as hypothesis_settings

REPO = Path(__file__).resolve().parents[1]

# CI runs the same examples every time (no random seed, no example database carried between runs):
# a property test that fails there fails on every run, and a green run means the same thing twice.
hypothesis_settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
if os.environ.get("CI") == "true":
    hypothesis_settings.load_profile("ci")
SHARED_FIXTURE = REPO.parent / "shared" / "fixtures" / "pi" / "before-compaction.jsonl"


def require(condition: bool, reason: str) -> None:
    """Skip when ``condition`` is false — except in CI, where it is a failure."""
    if condition:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"required in CI: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def real_session() -> Path:
    """``../shared/fixtures/pi/before-compaction.jsonl`` (v1, 1003 lines)."""
    require(SHARED_FIXTURE.is_file(), f"Pi fixture not found at {SHARED_FIXTURE}")
    return SHARED_FIXTURE


@pytest.fixture(autouse=True)
def isolated_agent_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point ``PI_CODING_AGENT_DIR`` at an empty folder: a developer's own settings never leak into tests.

    ``XDG_CACHE_HOME`` too: daemons started by tests keep their open indexes there (``store/openindex.py``).
    """
    path = tmp_path_factory.mktemp("agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("xdg-cache")))
    return path


def write_pi_trust(agent: Path, folder: Path | str, decision: bool | None = True) -> Path:
    """Record Pi's trust decision for ``folder`` in ``<agent>/trust.json`` as Pi 1.6.0 writes it.

    (``ProjectTrustStore.setMany``: keys are realpaths, sorted, ``JSON.stringify(data, null, 2)`` + newline.)
    """
    import json

    path = agent / "trust.json"
    data = json.loads(path.read_text()) if path.exists() else {}
    data[os.path.realpath(folder)] = decision
    path.write_text(json.dumps(dict(sorted(data.items())), indent=2) + "\n")
    return path


@pytest.fixture
def trust_project(isolated_agent_dir: Path) -> Any:
    """``trust_project(folder)``: Pi's trust store trusts ``folder`` (its project settings apply)."""
    return lambda folder, decision=True: write_pi_trust(isolated_agent_dir, folder, decision)


# ------------------------------------------------------------------ short failure output

LONG = 1000  # a compared value whose repr is longer than this gets a summary, never a full diff


def _size(value: Any) -> int:
    return len(value) if isinstance(value, bytes | str) else len(repr(value))


def _lines(value: bytes | str) -> list[bytes] | list[str]:
    return value.splitlines(keepends=True)  # type: ignore[return-value]


def _first_difference(left: Any, right: Any) -> list[str]:
    """Sizes, line counts and the first differing line (or item) of two long values."""
    if isinstance(left, bytes | str) and type(left) is type(right):
        a, b = _lines(left), _lines(right)
        out = [f"sizes {len(left)} vs {len(right)}; lines {len(a)} vs {len(b)}"]
        for n, (x, y) in enumerate(zip(a, b, strict=False), start=1):
            if x != y:
                return [*out, f"first difference at line {n}:", f"  - {x[:200]!r}", f"  + {y[:200]!r}"]
        shorter = min(len(a), len(b))
        if len(a) == len(b):
            return out
        side, extra = ("left", a[shorter]) if len(a) > len(b) else ("right", b[shorter])
        return [*out, f"equal up to line {shorter}; then the {side} has {extra[:200]!r}"]
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        out = [f"lengths {len(left)} vs {len(right)}"]
        for n, (x, y) in enumerate(zip(left, right, strict=False)):
            if x != y:
                return [*out, f"first difference at index {n}:", f"  - {repr(x)[:300]}", f"  + {repr(y)[:300]}"]
        return [*out, f"equal up to index {min(len(left), len(right))}"]
    if isinstance(left, dict) and isinstance(right, dict):
        keys = sorted(set(left) ^ set(right), key=str)[:10]
        differing = sorted((k for k in set(left) & set(right) if left[k] != right[k]), key=str)[:5]
        return [f"keys only on one side: {keys}"] + [
            f"  [{k!r}]: {repr(left[k])[:200]} != {repr(right[k])[:200]}" for k in differing
        ]
    return [f"{type(left).__name__} vs {type(right).__name__}: {repr(left)[:300]} != {repr(right)[:300]}"]


def pytest_assertrepr_compare(config: pytest.Config, op: str, left: Any, right: Any) -> list[str] | None:
    """``==`` on long values (whole files, big lists) explains itself in a few lines.

    pytest does not truncate explanations when ``CI`` is set, and a byte diff of a
    whole session file once filled a CI log with 29 MB. Short values keep pytest's diff.
    """
    if op != "==" or max(_size(left), _size(right)) <= LONG:
        return None
    return [f"{type(left).__name__} == {type(right).__name__} failed (long values, summarized)",
            *_first_difference(left, right)]


# ------------------------------------------------------------------ time per tier

_TIER_SECONDS: dict[str, float] = {}
_TEST_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add each phase's duration to its tier (``tests/<tier>/…``) and its test."""
    parts = report.nodeid.split("/")
    tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0].split("::")[0]
    _TIER_SECONDS[tier] = _TIER_SECONDS.get(tier, 0.0) + report.duration
    _TEST_SECONDS[report.nodeid] = _TEST_SECONDS.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Seconds per test tier and the five slowest tests, so slow growth shows in every CI log."""
    if not _TIER_SECONDS:
        return
    terminalreporter.section("time per test tier")
    for tier, seconds in sorted(_TIER_SECONDS.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:8.1f} s  {tier}")
    terminalreporter.write_line("slowest:")
    for nodeid, seconds in sorted(_TEST_SECONDS.items(), key=lambda kv: -kv[1])[:5]:
        terminalreporter.write_line(f"{seconds:8.1f} s  {nodeid}")

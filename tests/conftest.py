"""Shared fixtures: the real Pi session fixture from ../shared and small builders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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
    """Point ``PI_CODING_AGENT_DIR`` at an empty folder: a developer's own settings never leak into tests."""
    path = tmp_path_factory.mktemp("agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(path))
    return path

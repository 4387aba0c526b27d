"""The project layer applies only where Pi's trust store trusts the folder.

The trust file is written by Pi 1.6.0's own ``ProjectTrustStore`` (node, the parity
packages) when they are installed, else the way it writes it (``write_pi_trust``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO, require, write_pi_trust

from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.settings import load_settings
from pi_sessiond.settings.trust import decision_for, untrusted_reason

TRUST_MANAGER = REPO / "tests/parity/node_modules/@earendil-works/pi-coding-agent/dist/core/trust-manager.js"


@pytest.fixture(autouse=True)
def recheck_files_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pi_sessiond.service.settings_store.RECHECK_SECONDS", 0.0)


def pi_sets_trust(agent: Path, updates: list[tuple[Path, bool | None]]) -> None:
    """Pi 1.6.0's ``new ProjectTrustStore(agentDir).setMany(updates)``."""
    require(shutil.which("node") is not None and TRUST_MANAGER.is_file(), "node and the parity packages")
    script = (f"import {{ProjectTrustStore}} from {json.dumps(TRUST_MANAGER.as_uri())};"
              "const [dir, updates] = JSON.parse(process.argv[1]);"
              "new ProjectTrustStore(dir).setMany(updates);")
    arg = json.dumps([str(agent), [{"path": str(p), "decision": d} for p, d in updates]])
    subprocess.run(["node", "--input-type=module", "-e", script, arg], check=True, timeout=60)


def project(tmp_path: Path, name: str = "proj") -> Path:
    cwd = tmp_path / "work" / name
    (cwd / ".pi").mkdir(parents=True)
    (cwd / ".pi" / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 4321}}))
    return cwd


def kept(store: SettingsStore, cwd: Path) -> tuple[int, list[tuple[str, str]]]:
    got = store.resolved(None, str(cwd))
    return got.settings.compaction.keep_recent_tokens, [(e.key, e.message) for e in got.errors]


def test_a_project_pi_does_not_trust_is_skipped_and_reported(tmp_path: Path) -> None:
    cwd = project(tmp_path)
    value, errors = kept(SettingsStore(), cwd)
    assert value == 20000
    assert len(errors) == 1 and errors[0][0] == "*" and "not trusted" in errors[0][1] and str(cwd) in errors[0][1]
    assert load_settings(str(cwd)).settings.compaction.keep_recent_tokens == 20000  # the command line too


def test_trust_written_by_pi_itself_applies_the_project_layer(tmp_path: Path, isolated_agent_dir: Path) -> None:
    cwd, other = project(tmp_path), project(tmp_path, "other")
    store = SettingsStore()
    pi_sets_trust(isolated_agent_dir, [(cwd, True)])
    assert kept(store, cwd) == (4321, [])
    assert kept(store, other)[0] == 20000  # a sibling is not trusted
    pi_sets_trust(isolated_agent_dir, [(cwd.parent, True), (other, False)])  # "Trust parent folder", one refusal
    assert kept(store, other)[0] == 20000 and kept(store, cwd) == (4321, [])
    pi_sets_trust(isolated_agent_dir, [(cwd, None)])  # no decision of its own: the parent's counts
    assert kept(store, cwd) == (4321, [])
    pi_sets_trust(isolated_agent_dir, [(cwd, False)])
    assert kept(store, cwd)[0] == 20000


def test_the_nearest_decision_wins_through_symlinks(tmp_path: Path, isolated_agent_dir: Path) -> None:
    cwd = project(tmp_path)
    link = tmp_path / "link"
    link.symlink_to(cwd)
    write_pi_trust(isolated_agent_dir, cwd.parent)
    write_pi_trust(isolated_agent_dir, cwd, None)
    assert kept(SettingsStore(), link) == (4321, [])  # Pi keys trust by realpath
    assert decision_for({str(cwd.parent): True, str(cwd): False}, str(cwd / "sub")) is False


def test_default_project_trust_always_trusts_and_a_broken_trust_file_trusts_nothing(
    tmp_path: Path, isolated_agent_dir: Path
) -> None:
    cwd = project(tmp_path)
    (isolated_agent_dir / "settings.json").write_text(json.dumps({"defaultProjectTrust": "always"}))
    store = SettingsStore()
    assert kept(store, cwd) == (4321, [])
    write_pi_trust(isolated_agent_dir, cwd)
    (isolated_agent_dir / "trust.json").write_text('{"/x": "yes"}')  # Pi refuses this file
    value, errors = kept(store, cwd)
    assert value == 20000 and "unusable" in errors[0][1]
    assert untrusted_reason(str(cwd), {}, "never") is not None and untrusted_reason(str(cwd), {}, "ask") is not None


def test_global_only_keys_of_a_trusted_project_are_still_ignored(tmp_path: Path, trust_project: Any) -> None:
    cwd = project(tmp_path)
    (cwd / ".pi" / "settings.json").write_text(json.dumps({"daemon": {"fsync": "never"}, "tokenizer": "cl100k"}))
    trust_project(cwd)
    got = SettingsStore().resolved(None, str(cwd))
    assert got.settings.daemon.fsync == "always" and got.settings.tokenizer == "cl100k"
    assert [(e.key, "global-only" in e.message) for e in got.errors] == [("daemon", True)]

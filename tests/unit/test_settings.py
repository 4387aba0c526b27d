"""The typed settings tree: defaults, per-key fallback with file and key, sources, the project guard."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from pi_protocol import unstructure
from pi_protocol.params import GetSettingsParams
from pi_protocol.settings import Settings
from pi_sessiond.errors import InvalidParams
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.settings import DEFAULT_LAYER, Layer, compaction_for, first_problem, load_settings, resolve
from pi_sessiond.summarizers.config import summarizer_settings

from .service.fakes import make_daemon

# The documented defaults, copied by hand: a changed default must be a deliberate change here too.
PROTOCOL_DEFAULTS = {
    "compaction": {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000, "modelOverrides": {},
                   "masking": {"enabled": False, "tools": ["read", "bash", "grep", "find", "ls"], "minTokens": 500,
                               "olderThanTokens": 40000}, "prepareAt": None, "autoPerTurn": None},
    "branchSummary": {"reserveTokens": 16384},
    "contextWindow": None,
    "models": {},
    "summarizer": {"provider": "offline", "baseUrl": None, "model": None, "apiKeyEnv": None,
                   "contextWindow": 128000, "maxTokens": None, "headers": {}, "timeoutSeconds": 120,
                   "parallelSplitTurn": False, "cacheReuse": "auto", "prices": {}},
    "retry": {"enabled": True, "maxRetries": 3, "baseDelayMs": 2000, "maxAgentDelayMs": 60000},
    "tokenizer": "pi",
    "daemon": {"hookTimeoutSeconds": 30, "reviewTimeoutSeconds": None, "fsync": "always",
               "maxMessageBytes": 67108864, "maxConcurrentSummaries": 4,
               "liveWriterSeconds": 30, "lockIdleSeconds": 60, "maxBatchItems": 1000,
               "maxConnections": 64, "idleConnectionSeconds": 600, "maxSessionBytes": 4294967296,
               "openIndex": True, "tailOpenBytes": 32 * 1024 * 1024},
    "security": {"allowProjectSummarizerSettings": False, "allowWireApiKeyEnv": False},
}

# One invalid value of each kind, and the key the error must name.
INVALID = [
    ({"tokenizer": "nope"}, "tokenizer", "'pi' or 'cl100k' or 'calibrated'"),
    ({"daemon": {"fsync": 1}}, "daemon.fsync", "got number"),
    ({"compaction": {"reserveTokens": "lots"}}, "compaction.reserveTokens", "expected number, got string"),
    ({"compaction": {"keepRecentTokens": -1}}, "compaction.keepRecentTokens", ">= 0, got -1"),
    ({"daemon": {"hookTimeoutSeconds": 0}}, "daemon.hookTimeoutSeconds", "> 0, got 0"),
    ({"daemon": {"maxMessageBytes": None}}, "daemon.maxMessageBytes", "got null"),
    ({"compaction": {"enabled": "yes"}}, "compaction.enabled", "expected boolean"),
    ({"branchSummary": 5}, "branchSummary", "expected an object, got number"),
    ({"models": []}, "models", "expected object, got array"),
    ({"summarizer": {"headers": {"X-Team": 7}}}, "summarizer.headers.X-Team", "expected string, got number"),
    ({"summarizer": {"maxTokens": 1.5}}, "summarizer.maxTokens", "got number"),
    ({"summarizer": {"parallelSplitTurn": "yes"}}, "summarizer.parallelSplitTurn", "expected boolean"),
    ({"retry": {"maxRetries": -1}}, "retry.maxRetries", ">= 0, got -1"),
    ({"retry": {"baseDelayMs": "2s"}}, "retry.baseDelayMs", "expected number, got string"),
    ({"retry": {"enabled": 1}}, "retry.enabled", "expected boolean"),
    ({"compaction": {"modelOverrides": []}}, "compaction.modelOverrides", "expected an object, got array"),
    ({"compaction": {"masking": {"tools": "read"}}}, "compaction.masking.tools", "expected array"),
    ({"compaction": {"masking": {"minTokens": -1}}}, "compaction.masking.minTokens", ">= 0, got -1"),
    ({"compaction": {"prepareAt": 0}}, "compaction.prepareAt", "> 0, got 0"),
    ({"compaction": {"prepareAt": "80%"}}, "compaction.prepareAt", "got string"),
    ({"compaction": {"modelOverrides": {"a/b": 5}}}, "compaction.modelOverrides.a/b", "expected an object"),
    ({"compaction": {"modelOverrides": {"a/b": {"reserveTokens": -5}}}}, "compaction.modelOverrides.a/b.reserveTokens",
     ">= 0, got -5"),
    ({"compaction": {"modelOverrides": {"a/b": {"keepRecentTokens": 1.5}}}},
     "compaction.modelOverrides.a/b.keepRecentTokens", "got number"),
]


def write_json(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_defaults_are_the_protocol_table_and_feed_every_consumer() -> None:
    assert unstructure(Settings()) == PROTOCOL_DEFAULTS
    resolved = resolve([])
    assert resolved.settings == Settings() and resolved.errors == ()
    assert set(resolved.sources.values()) == {"default"} and resolved.sources["summarizer.headers"] == "default"
    built = summarizer_settings(resolved.settings.summarizer)
    shown = (built.provider, built.context_window, built.timeout_seconds, built.parallel_split_turn)
    assert shown == ("offline", 128000, 120, False)
    assert resolved.settings.retry.max_retries == 3 and resolved.settings.retry.base_delay_ms == 2000


@pytest.mark.parametrize(("layer", "key", "message"), INVALID, ids=[case[1] for case in INVALID])
def test_an_invalid_file_value_falls_back_to_the_lower_layer_and_is_listed(
    layer: dict[str, Any], key: str, message: str
) -> None:
    below = {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 2000, "enabled": False,
                            "modelOverrides": {"a/b": {"reserveTokens": 7, "keepRecentTokens": 8}},
                            "masking": {"tools": ["read"], "minTokens": 300}, "prepareAt": 0.8},
             "branchSummary": {"reserveTokens": 3000}, "tokenizer": "cl100k", "models": {"a/b": {"contextWindow": 9}},
             "daemon": {"fsync": "never", "hookTimeoutSeconds": 5, "maxMessageBytes": 4000},
             "summarizer": {"headers": {"X-Team": "blue"}, "maxTokens": 700, "parallelSplitTurn": True},
             "retry": {"enabled": False, "maxRetries": 1, "baseDelayMs": 10}}
    resolved = resolve([DEFAULT_LAYER, Layer("global", below, "/g.json"), Layer("initialize", layer, "/i.json")])
    assert [(e.file, e.key) for e in resolved.errors] == [("/i.json", key)]
    assert message in resolved.errors[0].message
    assert unstructure(resolved.settings) == unstructure(resolve([Layer("global", below)]).settings)
    claimed = [source for dotted, source in resolved.sources.items() if dotted.startswith(key)]
    assert claimed and set(claimed) == {"global"}


def test_model_overrides_resolve_per_field_for_the_sessions_model() -> None:
    base = {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 2000,
                           "modelOverrides": {"anthropic/claude-x": {"reserveTokens": 50},
                                              "openai/gpt-y": {"keepRecentTokens": 60}}}}
    project = {"compaction": {"modelOverrides": {"anthropic/claude-x": {"keepRecentTokens": -1}}}}
    resolved = resolve([Layer("global", base, "/g.json"), Layer("project", project, "/p.json")])
    assert [(e.file, e.key) for e in resolved.errors] == [("/p.json", "compaction.modelOverrides.anthropic/claude-x"
                                                                     ".keepRecentTokens")]
    compaction = resolved.settings.compaction

    def resolved_for(provider: str, model: str) -> tuple[int, int]:
        shown = compaction_for(compaction, {"provider": provider, "modelId": model})
        assert shown.model_overrides == {} and shown.enabled == compaction.enabled
        return shown.reserve_tokens, shown.keep_recent_tokens

    assert resolved_for("anthropic", "claude-x") == (50, 2000)  # the invalid project field fell back a layer
    assert resolved_for("openai", "gpt-y") == (1000, 60)
    assert resolved_for("openai", "claude-x") == (1000, 2000)
    assert compaction_for(compaction, None).reserve_tokens == 1000


def test_unknown_keys_are_ignored_and_valid_siblings_of_an_invalid_key_apply() -> None:
    pi_keys = {"defaultProvider": "anthropic", "compaction": {"reserveTokens": -5, "keepRecentTokens": 99, "x": 1}}
    resolved = resolve([Layer("project", pi_keys, "/p/.pi/settings.json")])
    assert resolved.settings.compaction.keep_recent_tokens == 99
    assert resolved.settings.compaction.reserve_tokens == 16384
    assert "defaultProvider" not in unstructure(resolved.settings) and "compaction.x" not in resolved.sources
    assert [e.key for e in resolved.errors] == ["compaction.reserveTokens"]


def test_null_is_a_value_where_the_tree_allows_it() -> None:
    resolved = resolve([Layer("global", {"daemon": {"reviewTimeoutSeconds": 60}, "contextWindow": 5000}),
                        Layer("session", {"daemon": {"reviewTimeoutSeconds": None}, "contextWindow": None})])
    assert resolved.settings.daemon.review_timeout_seconds is None and resolved.settings.context_window is None
    assert resolved.sources["daemon.reviewTimeoutSeconds"] == "session" and resolved.errors == ()


def test_the_project_guard_drops_the_summarizer_and_says_so() -> None:
    project = {"summarizer": {"baseUrl": "https://evil.example/v1"}, "tokenizer": "cl100k",
               "security": {"allowProjectSummarizerSettings": True}}
    refused = resolve([Layer("project", project, "/p.json")])
    assert refused.settings.summarizer.base_url is None and refused.settings.tokenizer == "cl100k"
    assert [(e.file, e.key) for e in refused.errors] == [("/p.json", "security"), ("/p.json", "summarizer")]
    assert "allowProjectSummarizerSettings" in refused.errors[1].message
    allowed = resolve([Layer("global", {"security": {"allowProjectSummarizerSettings": True}}),
                       Layer("project", project, "/p.json")])
    assert allowed.settings.summarizer.base_url == "https://evil.example/v1"
    assert [(e.file, e.key) for e in allowed.errors] == [("/p.json", "security")]  # still global-only
    assert allowed.sources["summarizer.baseUrl"] == "project"


def test_first_problem_names_the_key_for_layers_refused_whole() -> None:
    assert first_problem({"tokenizer": "pi", "unknown": {"x": 1}}) is None
    assert first_problem([]) == "settings: expected an object"
    problem = first_problem({"daemon": {"maxConcurrentSummaries": 0}})
    assert problem is not None and problem.startswith("settings.daemon.maxConcurrentSummaries: expected a number > 0")
    store = SettingsStore()
    for layer, key, _ in INVALID:
        with pytest.raises(InvalidParams, match=rf"settings\.{key.replace('.', r'.')}"):
            store.update(layer)
    assert store.settings() == Settings()  # nothing was applied


def test_store_lists_file_errors_logs_them_once_and_daemon_reports_them(
    tmp_path: Path, isolated_agent_dir: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pi_sessiond.service.settings_store.RECHECK_SECONDS", 0.0)
    path = write_json(isolated_agent_dir / "settings.json",
                      {"daemon": {"fsync": "sometimes", "maxConcurrentSummaries": 2}, "theme": "dark"})
    daemon, _ = make_daemon(tmp_path)
    with caplog.at_level(logging.WARNING):
        for _ in range(3):
            got = daemon.get_settings(GetSettingsParams())
        daemon.settings.update({"tokenizer": "cl100k"})  # a change re-resolves the layers
        daemon.get_settings(GetSettingsParams())
    assert got.settings["daemon"]["fsync"] == "always" and got.settings["daemon"]["maxConcurrentSummaries"] == 2
    assert got.errors is not None and [(e.file, e.key) for e in got.errors] == [(str(path), "daemon.fsync")]
    assert got.sources is not None and got.sources["daemon.fsync"] == "default"
    assert "theme" not in got.settings
    assert caplog.text.count("daemon.fsync") == 1
    assert unstructure(got)["errors"][0] == {"file": str(path), "key": "daemon.fsync",
                                             "message": "expected 'always' or 'never', got string \"sometimes\""}


def test_command_line_settings_use_the_same_layers(
    tmp_path: Path, isolated_agent_dir: Path, trust_project: Any
) -> None:
    trust_project(tmp_path)
    write_json(isolated_agent_dir / "settings.json", {"compaction": {"keepRecentTokens": 123}, "tokenizer": 5})
    write_json(tmp_path / ".pi" / "settings.json", {"branchSummary": {"reserveTokens": 456},
                                                  "summarizer": {"provider": "openai"}})
    resolved = load_settings(str(tmp_path), {"compaction": {"reserveTokens": 789}})
    s = resolved.settings
    assert (s.compaction.keep_recent_tokens, s.compaction.reserve_tokens, s.branch_summary.reserve_tokens) == (
        123, 789, 456)
    assert s.tokenizer == "pi" and s.summarizer.provider == "offline"
    assert sorted(e.key for e in resolved.errors) == ["summarizer", "tokenizer"]


def test_daemon_and_security_are_global_only() -> None:
    """A cloned repository cannot lower durability, raise limits or grant itself wire rights."""
    project = {"daemon": {"fsync": "never", "maxConnections": 100000}, "security": {"allowWireApiKeyEnv": True},
               "tokenizer": "cl100k"}
    got = resolve([Layer("global", {"daemon": {"maxBatchItems": 10}}, "/g.json"), Layer("project", project, "/p.json")])
    s = got.settings
    assert (s.daemon.fsync, s.daemon.max_connections, s.security.allow_wire_api_key_env) == ("always", 64, False)
    assert s.daemon.max_batch_items == 10 and s.tokenizer == "cl100k"  # the global value and the rest still apply
    assert sorted(e.key for e in got.errors) == ["daemon", "security"]
    assert all("global-only" in e.message and e.file == "/p.json" for e in got.errors)
    assert got.sources["daemon.fsync"] == "default" and got.sources["daemon.maxBatchItems"] == "global"
    assert resolve([Layer("initialize", {"daemon": {"fsync": "never"}})]).settings.daemon.fsync == "never"


def test_an_untrusted_project_layer_is_skipped_and_reported() -> None:
    project = {"compaction": {"keepRecentTokens": 5}}
    got = resolve([Layer("project", project, "/p/.pi/settings.json", refused="ignored: not trusted")])
    assert got.settings.compaction.keep_recent_tokens == 20000
    assert [(e.file, e.key, e.message) for e in got.errors] == [("/p/.pi/settings.json", "*", "ignored: not trusted")]
    assert resolve([Layer("project", {}, "/p.json", refused="ignored")]).errors == ()  # nothing to skip: silent


def test_sessions_without_a_layer_of_their_own_share_one_resolution_per_cwd(isolated_agent_dir: Path) -> None:
    store = SettingsStore()
    shared = {id(store.resolved(f"s{i}", "/w")) for i in range(600)}  # more sessions than the cache holds
    assert len(shared) == 1
    store.update({"daemon": {"lockIdleSeconds": 7}}, session_id="s3")
    assert store.settings("s3", "/w").daemon.lock_idle_seconds == 7
    assert store.settings("s4", "/w").daemon.lock_idle_seconds != 7
    assert store.resolved("s4", "/w") is store.resolved("s5", "/w")


@pytest.mark.parametrize(
    ("layer", "message"),
    [
        ({"tokenizer": "gpt"}, "tokenizer: expected 'pi' or 'cl100k' or 'calibrated', got string \"gpt\""),
        ({"compaction": {"reserveTokens": "lots"}}, "compaction.reserveTokens: expected number, got string \"lots\""),
        ({"summarizer": {"headers": {"x-api-key": 5}}}, "summarizer.headers.x-api-key: expected string, got number"),
    ],
    ids=["shown", "shown-nested", "a-header-is-never-shown"],
)
def test_a_bad_value_is_shown_unless_its_key_may_hold_a_secret(layer: dict[str, Any], message: str) -> None:
    from pi_sessiond.settings.check import check_layer

    _, problems = check_layer(layer)
    assert [f"{key}: {text}" for key, text in problems] == [message]

"""make_summarizer and the API-key lookup (environment, Pi's auth.json)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pi_sessiond.summarizers.anthropic import AnthropicSummarizer
from pi_sessiond.summarizers.auth import agent_dir, resolve_api_key
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.errors import SummarizerConfigError
from pi_sessiond.summarizers.factory import make_summarizer
from pi_sessiond.summarizers.openai import OpenAISummarizer

KEY = "sk-test-factory-0123456789"


async def test_openai_and_anthropic(tmp_path: Path) -> None:
    env = {"MY_KEY": KEY, "PI_CODING_AGENT_DIR": str(tmp_path)}
    openai = make_summarizer(SummarizerSettings(provider="openai", model="gpt-5-mini", api_key_env="MY_KEY"), env)
    anthropic = make_summarizer(SummarizerSettings(provider="anthropic", model="claude-haiku-4-5"), env)
    try:
        assert isinstance(openai, OpenAISummarizer)
        assert openai.request_headers()["authorization"] == f"Bearer {KEY}"
        assert openai.name == "openai:gpt-5-mini"
        assert isinstance(anthropic, AnthropicSummarizer)
        assert "x-api-key" not in anthropic.request_headers()
    finally:
        await openai.aclose()
        await anthropic.aclose()


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_model_is_required(provider: str) -> None:
    with pytest.raises(SummarizerConfigError, match=f"summarizer.model is required for provider {provider}"):
        make_summarizer(SummarizerSettings(provider=provider), {})


def test_unknown_provider_lists_valid_ones() -> None:
    with pytest.raises(SummarizerConfigError, match="valid providers: offline, openai, anthropic"):
        make_summarizer(SummarizerSettings(provider="gemini", model="x"), {})


def test_offline_is_imported_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pi_sessiond.summarizers.offline", None)  # import -> ModuleNotFoundError
    with pytest.raises(SummarizerConfigError, match="offline summarizer is not available"):
        make_summarizer(SummarizerSettings())


def test_missing_key_variable_names_the_variable_only() -> None:
    settings = SummarizerSettings(provider="anthropic", model="m", api_key_env="NOT_SET_ANYWHERE")
    with pytest.raises(SummarizerConfigError, match="NOT_SET_ANYWHERE"):
        make_summarizer(settings, {})


def _pi_dir(tmp_path: Path, data: object) -> dict[str, str]:
    (tmp_path / "auth.json").write_text(json.dumps(data))
    return {"PI_CODING_AGENT_DIR": str(tmp_path)}


def test_key_from_pi_auth_json(tmp_path: Path) -> None:
    env = _pi_dir(tmp_path, {"anthropic": {"type": "api_key", "key": KEY}})
    assert resolve_api_key(SummarizerSettings(provider="anthropic", model="m"), env) == KEY


def test_auth_json_key_may_name_an_environment_variable(tmp_path: Path) -> None:
    env = _pi_dir(tmp_path, {"openai": {"type": "api_key", "key": "OPENAI_KEY_VAR"}}) | {"OPENAI_KEY_VAR": KEY}
    assert resolve_api_key(SummarizerSettings(provider="openai", model="m"), env) == KEY


@pytest.mark.parametrize(
    "entry",
    [
        {"type": "oauth", "access": "token", "refresh": "r", "expires": 0},
        {"type": "api_key", "key": "!security find-generic-password -w"},
        "not an object",
    ],
)
def test_oauth_and_command_entries_are_skipped(tmp_path: Path, entry: object) -> None:
    env = _pi_dir(tmp_path, {"anthropic": entry})
    assert resolve_api_key(SummarizerSettings(provider="anthropic", model="m"), env) is None


def test_env_setting_wins_and_conventional_variable_is_the_fallback(tmp_path: Path) -> None:
    env = _pi_dir(tmp_path, {}) | {"ANTHROPIC_API_KEY": "conventional-key", "MINE": KEY}
    settings = SummarizerSettings(provider="anthropic", model="m")
    assert resolve_api_key(settings, env) == "conventional-key"
    assert resolve_api_key(SummarizerSettings(provider="anthropic", model="m", api_key_env="MINE"), env) == KEY


def test_implicit_keys_are_not_sent_to_other_hosts(tmp_path: Path) -> None:
    env = _pi_dir(tmp_path, {"openai": {"type": "api_key", "key": KEY}}) | {"OPENAI_API_KEY": KEY}
    local = SummarizerSettings(provider="openai", model="m", base_url="http://127.0.0.1:8080/v1")
    official = SummarizerSettings(provider="openai", model="m", base_url="https://api.openai.com/v1")
    assert resolve_api_key(local, env) is None
    assert resolve_api_key(official, env) == KEY


def test_agent_dir() -> None:
    assert agent_dir({"PI_CODING_AGENT_DIR": "~/elsewhere"}) == Path.home() / "elsewhere"
    assert agent_dir({}) == Path.home() / ".pi" / "agent"


def test_unreadable_auth_json_is_no_key(tmp_path: Path) -> None:
    (tmp_path / "auth.json").write_text("{not json")
    env = {"PI_CODING_AGENT_DIR": str(tmp_path)}
    assert resolve_api_key(SummarizerSettings(provider="anthropic", model="m"), env) is None

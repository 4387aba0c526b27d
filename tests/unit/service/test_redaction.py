"""A key in ``summarizer.headers`` (or a model's) is never echoed.

``pi/getSettings``, ``pi/updateSettings`` and the ``pi/beforeCompact`` payload show
``***`` for key-like header names (authorization, x-api-key, *token*, *key*,
*secret*) and secret-named values; other headers and ``apiKeyEnv`` (a variable's
name) stay visible. Real daemon, real settings store, a hook that records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_protocol.params import CompactParams, GetSettingsParams, UpdateSettingsParams
from pi_sessiond.errors import Rejected
from pi_sessiond.settings.redact import redact_settings

from .fakes import Counting, Hooks, Progress, make_daemon, open_file, session_file

SECRETS = {"Authorization": "Bearer sk-auth-1", "x-api-key": "sk-xapi-2", "X-Session-Token": "tok-3",
           "my-secret": "sec-4", "Api_Key": "key-5"}
PLAIN = {"X-Title": "pi-sessiond", "anthropic-beta": "x"}
SETTINGS = {"summarizer": {"headers": {**SECRETS, **PLAIN}, "apiKeyEnv": "MY_KEY_VAR"},
            "models": {"a/b": {"apiKey": "sk-model-6", "headers": {"cookie": "c-7"}, "contextWindow": 5}}}
VALUES = [*SECRETS.values(), "sk-model-6", "c-7"]


def assert_redacted(shown: Any) -> None:
    text = json.dumps(shown)
    assert not [value for value in VALUES if value in text]
    summarizer = shown["summarizer"]
    assert summarizer["headers"] == {**dict.fromkeys(SECRETS, "***"), **PLAIN}
    assert summarizer["apiKeyEnv"] == "MY_KEY_VAR"
    assert shown["models"]["a/b"] == {"apiKey": "***", "headers": {"cookie": "***"}, "contextWindow": 5}


def test_get_and_update_settings_redact_key_like_headers(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    assert_redacted(daemon.update_settings(UpdateSettingsParams(settings=SETTINGS)).settings)
    assert_redacted(daemon.get_settings(GetSettingsParams()).settings)
    effective = daemon.settings.settings().summarizer.headers
    assert effective["x-api-key"] == "sk-xapi-2"  # redacted when shown, never when used


async def test_the_before_compact_payload_redacts_them_too(tmp_path: Path) -> None:
    hooks = Hooks(beforeCompact={"cancel": True})
    daemon, _ = make_daemon(tmp_path, hooks=hooks, summarizer=Counting())
    daemon.update_settings(UpdateSettingsParams(settings=SETTINGS))
    sid = open_file(daemon, session_file(tmp_path))
    with pytest.raises(Rejected):  # the hook cancelled it; the payload it saw is what matters
        await daemon.compact(CompactParams(session_id=sid), Progress())
    (method, payload, _), = hooks.calls
    assert method == "pi/beforeCompact"
    assert_redacted(json.loads(json.dumps(payload, default=_plain))["preparation"]["settings"])


def test_redact_settings_leaves_a_settings_tree_without_secrets_alone() -> None:
    data = {"compaction": {"reserveTokens": 5, "keepRecentTokens": 6}, "summarizer": {"maxTokens": 7}}
    assert redact_settings(data) == data


def _plain(value: Any) -> Any:
    from pi_protocol import unstructure

    return unstructure(value)

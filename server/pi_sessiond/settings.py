"""Settings: PROTOCOL.md "Settings", layered as Pi does.

Layers, lowest first: built-in defaults < global ``~/.pi/agent/settings.json``
< project ``<cwd>/.pi/settings.json`` < overrides (``initializationOptions``,
command-line flags, ``pi/updateSettings``). Objects merge key by key; other
values replace. A project file may not change ``summarizer.*`` unless
``security.allowProjectSummarizerSettings`` is true in a lower layer — a cloned
repository must not redirect your API key. Unreadable or malformed files are
reported and skipped, never fatal.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.store.layout import agent_dir
from pi_sessiond.summarizers.config import SummarizerSettings

JsonDict = dict[str, Any]
log = logging.getLogger("pi_sessiond.settings")

DEFAULTS: JsonDict = {
    "compaction": {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000},
    "branchSummary": {"reserveTokens": 16384},
    "contextWindow": None,
    "models": {},
    "summarizer": {
        "provider": "offline",
        "baseUrl": None,
        "model": None,
        "apiKeyEnv": None,
        "contextWindow": 128000,
        "maxTokens": None,
        "headers": {},
        "timeoutSeconds": 120,
    },
    "tokenizer": "pi",
    "daemon": {
        "hookTimeoutSeconds": 30,
        "reviewTimeoutSeconds": None,
        "fsync": "always",
        "maxMessageBytes": 67108864,
        "maxConcurrentSummaries": 4,
    },
    "security": {"allowProjectSummarizerSettings": False},
}


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> JsonDict:
    """Nested merge: objects merge key by key, everything else replaces."""
    out: JsonDict = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def read_json_file(path: Path) -> JsonDict:
    """A settings file's object, or ``{}`` (with a warning) when it is unusable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("ignoring settings file %s: %s", path, exc)
        return {}
    if not isinstance(data, dict):
        log.warning("ignoring settings file %s: not a JSON object", path)
        return {}
    return data


def load_settings(cwd: str | None = None, overrides: Mapping[str, Any] | None = None) -> JsonDict:
    """Defaults < global < project (guarded) < ``overrides``."""
    settings = merge(DEFAULTS, read_json_file(agent_dir() / "settings.json"))
    if cwd:
        project = read_json_file(Path(cwd) / ".pi" / "settings.json")
        if "summarizer" in project and not settings["security"].get("allowProjectSummarizerSettings"):
            log.warning("ignoring summarizer.* in %s/.pi/settings.json (security.allowProjectSummarizerSettings)", cwd)
            project = {k: v for k, v in project.items() if k not in ("summarizer", "security")}
        settings = merge(settings, project)
    return merge(settings, overrides or {})


def compaction_settings(settings: Mapping[str, Any]) -> CompactionSettings:
    """``compaction.*`` as the pure compaction code wants it."""
    section = settings.get("compaction") or {}
    return CompactionSettings(
        enabled=bool(section.get("enabled", True)),
        reserve_tokens=int(section.get("reserveTokens", 16384)),
        keep_recent_tokens=int(section.get("keepRecentTokens", 20000)),
    )


def summarizer_settings(settings: Mapping[str, Any]) -> SummarizerSettings:
    """``summarizer.*`` as the summarizer factory wants it."""
    s = settings.get("summarizer") or {}
    max_tokens = s.get("maxTokens")
    return SummarizerSettings(
        provider=str(s.get("provider") or "offline"),
        base_url=s.get("baseUrl"),
        model=s.get("model"),
        api_key_env=s.get("apiKeyEnv"),
        context_window=int(s.get("contextWindow") or 128000),
        max_tokens=int(max_tokens) if max_tokens else None,
        headers={str(k): str(v) for k, v in (s.get("headers") or {}).items()},
        timeout_seconds=float(s.get("timeoutSeconds") or 120),
    )


def branch_reserve_tokens(settings: Mapping[str, Any]) -> int:
    """``branchSummary.reserveTokens``."""
    return int((settings.get("branchSummary") or {}).get("reserveTokens", 16384))

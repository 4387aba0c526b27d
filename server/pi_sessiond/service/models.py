"""The agent model's context window (PROTOCOL.md "Settings").

Resolution order: ``contextWindow`` if set; else ``models["<provider>/<modelId>"].contextWindow``
(the settings, then Pi's ``<agent dir>/models.json``); else a small built-in
table of common models (longest matching prefix wins); else 128000.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_protocol.settings import Settings
from pi_sessiond.settings.files import read_json_file
from pi_sessiond.store.layout import agent_dir

JsonDict = dict[str, Any]
FALLBACK_WINDOW = 128000

BUILTIN_WINDOWS: dict[str, int] = {
    "claude-": 200000,
    "gpt-4o": 128000,
    "gpt-4.1": 1047576,
    "gpt-4-turbo": 128000,
    "gpt-5": 400000,
    "o1": 200000,
    "o3": 200000,
    "o4-mini": 200000,
    "gemini-1.5-pro": 2097152,
    "gemini-1.5": 1048576,
    "gemini-2.0": 1048576,
    "gemini-2.5": 1048576,
    "grok-4": 256000,
    "deepseek": 128000,
    "mistral-large": 128000,
    "qwen3-coder": 262144,
    "kimi-k2": 131072,
}

_models_json_cache: dict[Path, tuple[tuple[int, int], JsonDict]] = {}


def context_window(settings: Settings, model: Mapping[str, Any] | None) -> int:
    """The context window of ``model`` (``{provider, modelId}`` from the session context)."""
    if settings.context_window is not None:
        return settings.context_window
    provider = str((model or {}).get("provider") or "")
    model_id = str((model or {}).get("modelId") or "")
    if not model_id:
        return FALLBACK_WINDOW
    configured = _from_models(settings.models, provider, model_id)
    if configured is None:
        configured = _from_pi_models_json(provider, model_id)
    return configured if configured is not None else builtin_window(model_id)


def builtin_window(model_id: str) -> int:
    """The built-in table's window for ``model_id`` (provider prefixes like ``openai/`` ignored)."""
    name = model_id.rsplit("/", 1)[-1].lower()
    best = ""
    for prefix in BUILTIN_WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return BUILTIN_WINDOWS[best] if best else FALLBACK_WINDOW


def _window_of(value: Any) -> int | None:
    if not isinstance(value, Mapping):
        return None
    window = value.get("contextWindow")
    if isinstance(window, int | float) and not isinstance(window, bool) and window > 0:
        return int(window)
    return None


def _from_models(models: Any, provider: str, model_id: str) -> int | None:
    if not isinstance(models, Mapping):
        return None
    return _window_of(models.get(f"{provider}/{model_id}")) or _window_of(models.get(model_id))


def _from_pi_models_json(provider: str, model_id: str) -> int | None:
    """Pi's ``models.json``: ``{"providers": {name: {"models": [{"id", "contextWindow"}]}}}``."""
    providers = _read_models_json().get("providers")
    if not isinstance(providers, Mapping):
        return None
    entry = providers.get(provider)
    models = entry.get("models") if isinstance(entry, Mapping) else None
    if not isinstance(models, list):
        return None
    for model in models:
        if isinstance(model, Mapping) and model.get("id") == model_id:
            return _window_of(model)
    return None


def _read_models_json() -> JsonDict:
    path = agent_dir() / "models.json"
    try:
        st = path.stat()
    except OSError:
        return {}
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _models_json_cache.get(path)
    if cached is None or cached[0] != stamp:
        cached = _models_json_cache[path] = (stamp, read_json_file(path))
    return cached[1]

"""The agent model's context window and the summarizer model's output limit.

Window resolution order: ``contextWindow`` if set; else
``models["<provider>/<modelId>"].contextWindow`` (the settings, then Pi's
``<agent dir>/models.json``); else a small built-in table of common models
(longest matching prefix wins); else 128000.

Output limit of the summarizer model (``summarizer.provider`` /
``summarizer.model``): ``models[…].maxTokens``, then Pi's ``models.json``,
then :data:`BUILTIN_MAX_OUTPUT`; ``None`` when none knows it (the request
builder then derives one from the window).

Price of the summarizer model (for ``usage.cost``): Pi's registry first (the
``cost`` of its ``models.json`` entry, then the built-in table of
:mod:`pi_sessiond.summarizers.pricing`), else ``summarizer.prices``
(``"<provider>/<model>"`` or the bare model id); ``None`` when none knows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_protocol.base import JsonDict
from pi_protocol.settings import Settings
from pi_sessiond.settings.files import read_json_file
from pi_sessiond.store.layout import agent_dir
from pi_sessiond.summarizers.pricing import ModelPrice, builtin_price, price_from

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

BUILTIN_MAX_OUTPUT: dict[str, int] = {
    "claude-3-5": 8192,
    "claude-3-7": 64000,
    "claude-sonnet-4": 64000,
    "claude-opus-4": 32000,
    "claude-haiku-4": 64000,
    "gpt-4o": 16384,
    "gpt-4.1": 32768,
    "gpt-5": 128000,
    "o1": 100000,
    "o3": 100000,
    "o4-mini": 100000,
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
    return _configured(settings, provider, model_id, "contextWindow") or builtin_window(model_id)


def summarizer_max_output(settings: Settings) -> int | None:
    """The summarizer model's own output limit, or ``None`` when unknown (see the module docstring)."""
    section = settings.summarizer
    if section.provider == "offline" or not section.model:
        return None
    found = _configured(settings, section.provider, section.model, "maxTokens")
    return found or _longest_prefix(BUILTIN_MAX_OUTPUT, section.model)


def summarizer_price(settings: Settings) -> ModelPrice | None:
    """The summarizer model's price, or ``None`` when unknown (see the module docstring)."""
    return model_price(settings, settings.summarizer.provider, settings.summarizer.model or "")


def model_price(settings: Settings, provider: str, model_id: str) -> ModelPrice | None:
    """The price of ``provider``/``model_id`` (see the module docstring)."""
    if provider == "offline" or not model_id:
        return None
    registry = price_from(_pi_model(provider, model_id).get("cost")) or builtin_price(model_id)
    if registry is not None:
        return registry
    table = settings.summarizer.prices
    return price_from(table.get(f"{provider}/{model_id}")) or price_from(table.get(model_id))


def builtin_window(model_id: str) -> int:
    """The built-in table's window for ``model_id`` (provider prefixes like ``openai/`` ignored)."""
    return _longest_prefix(BUILTIN_WINDOWS, model_id) or FALLBACK_WINDOW


def _longest_prefix(table: Mapping[str, int], model_id: str) -> int | None:
    name = model_id.rsplit("/", 1)[-1].lower()
    best = ""
    for prefix in table:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return table[best] if best else None


def _configured(settings: Settings, provider: str, model_id: str, key: str) -> int | None:
    configured = _from_models(settings.models, provider, model_id, key)
    return configured if configured is not None else _from_pi_models_json(provider, model_id, key)


def _number_of(value: Any, key: str) -> int | None:
    if not isinstance(value, Mapping):
        return None
    number = value.get(key)
    if isinstance(number, int | float) and not isinstance(number, bool) and number > 0:
        return int(number)
    return None


def _from_models(models: Any, provider: str, model_id: str, key: str) -> int | None:
    if not isinstance(models, Mapping):
        return None
    return _number_of(models.get(f"{provider}/{model_id}"), key) or _number_of(models.get(model_id), key)


def _from_pi_models_json(provider: str, model_id: str, key: str) -> int | None:
    """Pi's ``models.json``: ``{"providers": {name: {"models": [{"id", "contextWindow", "maxTokens"}]}}}``."""
    return _number_of(_pi_model(provider, model_id), key)


def _pi_model(provider: str, model_id: str) -> Mapping[str, Any]:
    """The entry of ``provider``/``model_id`` in Pi's ``models.json`` (empty when there is none)."""
    providers = _read_models_json().get("providers")
    if not isinstance(providers, Mapping):
        return {}
    entry = providers.get(provider)
    models = entry.get("models") if isinstance(entry, Mapping) else None
    if not isinstance(models, list):
        return {}
    for model in models:
        if isinstance(model, Mapping) and model.get("id") == model_id:
            return model
    return {}


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

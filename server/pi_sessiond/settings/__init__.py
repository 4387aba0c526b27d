"""Settings: the typed tree of :mod:`pi_protocol.settings`, layered as Pi does: project over global.

- :mod:`.check` checks one layer against the tree (unknown keys dropped,
  invalid known keys reported with their dotted key);
- :mod:`.layers` merges the layers into :class:`~pi_protocol.settings.Settings`
  with the source of each key and the issues (:func:`resolve`, pure);
- :mod:`.files` reads the settings files.

The daemon keeps its layers in :class:`pi_sessiond.service.settings_store.SettingsStore`;
the command line reads them once with :func:`load_settings`. Readers take the
typed object (``settings.daemon.fsync``, ``settings.compaction``…), never a dict.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from pi_protocol.settings import CompactionSettings, Settings
from pi_sessiond.settings.check import first_problem
from pi_sessiond.settings.files import global_path, project_path, read_json_file
from pi_sessiond.settings.layers import DEFAULT_LAYER, LAYERS, Layer, Resolved, merge, resolve
from pi_sessiond.settings.trust import trust_decisions, untrusted_reason

log = logging.getLogger("pi_sessiond.settings")

__all__ = [
    "DEFAULT_LAYER",
    "LAYERS",
    "CompactionSettings",
    "Layer",
    "Resolved",
    "Settings",
    "compaction_for",
    "file_layer",
    "first_problem",
    "global_path",
    "load_settings",
    "merge",
    "project_layer",
    "project_path",
    "read_json_file",
    "resolve",
]


def load_settings(cwd: str | None = None, overrides: Mapping[str, Any] | None = None) -> Resolved:
    """Default < global < project of ``cwd`` (guarded, trusted) < ``overrides``, read now; issues are logged."""
    global_layer = file_layer("global", global_path())
    layers = [DEFAULT_LAYER, global_layer]
    if cwd:
        path = project_path(cwd)
        layers.append(project_layer(cwd, read_json_file(path), str(path), global_layer.data, trust_decisions))
    layers.append(Layer("initialize", dict(overrides or {})))
    resolved = resolve(layers)
    for issue in resolved.errors:
        log.warning("%s: %s: %s", issue.file, issue.key, issue.message)
    return resolved


def file_layer(name: str, path: Path) -> Layer:
    """The layer ``name`` read from the settings file ``path``."""
    return Layer(name, read_json_file(path), str(path))


def project_layer(
    cwd: str, data: Mapping[str, Any], file: str, global_data: Mapping[str, Any], decisions: Any
) -> Layer:
    """The project layer of ``cwd``, refused when Pi's trust store does not trust ``cwd``.

    ``decisions()`` gives the trust file's content (or why it is unusable);
    it is called only when the project file sets something.
    """
    refused = untrusted_reason(cwd, decisions(), global_data.get("defaultProjectTrust")) if data else None
    return Layer("project", data, file, refused)


def compaction_for(compaction: CompactionSettings, model: Mapping[str, Any] | None) -> CompactionSettings:
    """``compaction.*`` resolved for ``model`` (``{provider, modelId}``), as Pi 1.6.0's ``getCompactionSettings``.

    Each of ``reserveTokens`` and ``keepRecentTokens`` comes from
    ``modelOverrides["provider/modelId"]`` when set there, else from the
    ordinary key; ``enabled`` stays global. The result carries no overrides
    (it is what a preparation's ``settings`` shows).
    """
    key = f"{(model or {}).get('provider') or ''}/{(model or {}).get('modelId') or ''}"
    override = compaction.model_overrides.get(key)
    reserve, keep = compaction.reserve_tokens, compaction.keep_recent_tokens
    if override is not None:
        reserve = override.reserve_tokens if override.reserve_tokens is not None else reserve
        keep = override.keep_recent_tokens if override.keep_recent_tokens is not None else keep
    return attrs.evolve(compaction, reserve_tokens=reserve, keep_recent_tokens=keep, model_overrides={})

"""Layered settings: raw partial layers in, the typed :class:`~pi_protocol.settings.Settings` out.

Layers, lowest first: ``default`` < ``global`` (``<agent dir>/settings.json``)
< ``project`` (``<cwd>/.pi/settings.json``) < ``initialize`` < ``session``.
Objects merge key by key; other values replace (``null`` included).

:func:`resolve` is pure. For each layer, in order:

1. The project guard: a project layer whose ``refused`` says why (Pi's trust
   store does not trust that folder, :mod:`.trust`) is skipped whole and
   listed once; ``daemon.*`` and ``security.*`` are global-only (a cloned
   repository cannot weaken durability or grant itself rights); and the
   project layer cannot change ``summarizer.*`` unless
   ``security.allowProjectSummarizerSettings`` is true in a layer *below* it
   (default or global) — a cloned repository must not redirect your key. A
   dropped section is listed as an issue of that file.
2. :func:`~pi_sessiond.settings.check.check_layer`: unknown keys are dropped;
   a known key with an invalid value is dropped too — so the next lower layer's
   value shows through — and listed as ``{file, key, message}``.

``sources`` maps every dotted leaf key of the result (an empty object is a
leaf) to the highest layer that set it or an object above it. Budgets no layer
sets follow ``contextWindow`` (:mod:`.window`); budgets that fill the window are
listed as an issue.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pi_protocol import structure, unstructure
from pi_protocol.base import JsonDict
from pi_protocol.settings import DEFAULT_SETTINGS, Settings, SettingsIssue
from pi_sessiond.settings.check import check_layer
from pi_sessiond.settings.window import contradictions, scale_to_window

LAYERS = ("default", "global", "project", "initialize", "session")
#: section -> the setting that, true below the project layer, lets a project file change it.
PROJECT_GUARDED: dict[str, tuple[str, str]] = {
    "summarizer": ("security", "allowProjectSummarizerSettings"),
}
#: sections only the default and global layers may set below the client layers.
GLOBAL_ONLY = ("daemon", "security")


@attrs.frozen
class Layer:
    """One layer: its name (one of :data:`LAYERS`), raw partial settings, and the file it came from.

    ``refused``, when set, says why the whole layer is not applied (an untrusted project).
    """

    name: str
    data: Mapping[str, Any]
    file: str | None = None
    refused: str | None = None


@attrs.frozen
class Resolved:
    """The merged, typed settings, each leaf key's source layer, and what was not applied."""

    settings: Settings
    sources: dict[str, str]
    errors: tuple[SettingsIssue, ...] = ()


DEFAULT_LAYER = Layer("default", unstructure(DEFAULT_SETTINGS))


def resolve(layers: Sequence[Layer]) -> Resolved:
    """Merge ``layers`` (lowest first, :data:`DEFAULT_LAYER` is added below them when missing)."""
    if not layers or layers[0].name != "default":
        layers = [DEFAULT_LAYER, *layers]
    merged: JsonDict = {}
    cleaned: list[tuple[str, JsonDict]] = []
    errors: list[SettingsIssue] = []
    files: list[str] = []
    for layer in layers:
        where = layer.file or layer.name
        files.append(where)
        data = _guarded(layer, merged, where, errors) if layer.name == "project" else layer.data
        clean, problems = check_layer(data)
        errors += [SettingsIssue(file=where, key=key, message=message) for key, message in problems]
        cleaned.append((layer.name, clean))
        merged = merge(merged, clean)
    set_above = [clean for name, clean in cleaned if name != "default"]
    settings = structure(scale_to_window(merged, set_above), Settings)
    window_file = next((f for f, (_, clean) in reversed(list(zip(files, cleaned, strict=True)))
                        if "contextWindow" in clean), "default")
    errors += contradictions(settings, window_file)
    return Resolved(settings=settings, sources=sources_of(unstructure(settings), cleaned), errors=tuple(errors))


def _guarded(layer: Layer, below: JsonDict, where: str, errors: list[SettingsIssue]) -> Mapping[str, Any]:
    if layer.refused is not None:
        if layer.data:
            errors.append(SettingsIssue(file=where, key="*", message=layer.refused))
        return {}
    data = layer.data
    for name in GLOBAL_ONLY:
        if name in data:
            data = {k: v for k, v in data.items() if k != name}
            message = f"ignored: {name}.* is global-only (set it in the global settings file)"
            errors.append(SettingsIssue(file=where, key=name, message=message))
    for guarded, (section, key) in PROJECT_GUARDED.items():
        if guarded in data and (below.get(section) or {}).get(key) is not True:
            data = {k: v for k, v in data.items() if k != guarded}
            message = f"ignored: a project file may set {guarded}.* only when {section}.{key} is true globally"
            errors.append(SettingsIssue(file=where, key=guarded, message=message))
    return data


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> JsonDict:
    """Nested merge: objects merge key by key, everything else replaces."""
    out: JsonDict = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def flatten(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Dotted leaf keys -> values; an empty object is a leaf."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.update(flatten(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def sources_of(merged: Mapping[str, Any], layers: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, str]:
    """For each leaf of ``merged``, the highest layer holding that key (or an object above it)."""
    flat_layers = [(name, flatten(layer)) for name, layer in layers]
    sources: dict[str, str] = {}
    for key in flatten(merged):
        prefixes = _prefixes(key)
        for name, flat in reversed(flat_layers):
            if key in flat or any(p in flat for p in prefixes):
                sources[key] = name
                break
        else:
            sources[key] = "default"
    return sources


def _prefixes(key: str) -> list[str]:
    parts = key.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]

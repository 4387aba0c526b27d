"""Settings with their sources (PROTOCOL.md "Settings").

Layers, lowest first: ``default`` < ``global`` (``<agent dir>/settings.json``)
< ``project`` (``<cwd>/.pi/settings.json``) < ``initialize``
(``initializationOptions.settings``, then ``workspace/didChangeConfiguration``
and ``pi/updateSettings`` without a session) < ``session``
(``pi/updateSettings`` with a ``sessionId``). Objects merge key by key.

Security rule: the project layer cannot change ``summarizer.*`` unless
``security.allowProjectSummarizerSettings`` is true in a layer *below* it
(default or global) — a cloned repository must not redirect your key, and the
project cannot grant itself that right.

``sources`` maps every dotted leaf key of the merged settings to the highest
layer that set it. Files are re-read when their mtime or size changes, and
merged settings are cached until a layer changes (every request reads them,
and a deep merge costs ~0.2 ms): callers must treat them as read-only.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_sessiond.errors import InvalidParams
from pi_sessiond.settings import DEFAULTS, merge, read_json_file
from pi_sessiond.store.layout import agent_dir

JsonDict = dict[str, Any]
log = logging.getLogger("pi_sessiond.service.settings")

RECHECK_SECONDS = 0.5
LAYERS = ("default", "global", "project", "initialize", "session")
_CHOICES: dict[str, tuple[Any, ...]] = {
    "tokenizer": ("pi", "cl100k", "calibrated"),
    "daemon.fsync": ("always", "never"),
    "summarizer.provider": ("offline", "openai", "anthropic"),
}


class _CachedFile:
    """A JSON object file, re-read only when its (mtime, size) changes.

    The file is stat'ed at most every :data:`RECHECK_SECONDS`: a hand edit of a
    settings file takes effect within that time, without a syscall per request.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._stamp: tuple[int, int] | None = None
        self._data: JsonDict = {}
        self._checked = -RECHECK_SECONDS

    @property
    def stamp(self) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` at the last read, ``None`` when missing."""
        return self._stamp

    def read(self) -> JsonDict:
        now = time.monotonic()
        if now - self._checked < RECHECK_SECONDS:
            return self._data
        self._checked = now
        try:
            st = self.path.stat()
        except OSError:
            self._stamp, self._data = None, {}
            return self._data
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            self._data = read_json_file(self.path)
            self._stamp = stamp
        return self._data


class SettingsStore:
    """All settings layers; :meth:`get` merges them for one session (or none)."""

    def __init__(self, initialize: Mapping[str, Any] | None = None) -> None:
        self._initialize: JsonDict = dict(initialize or {})
        self._sessions: dict[str, JsonDict] = {}
        self._files: dict[Path, _CachedFile] = {}
        self._global_path = agent_dir() / "settings.json"
        self._generation = 0
        self._merged: dict[tuple[Any, ...], JsonDict] = {}

    # ------------------------------------------------------------- updates
    def set_initialize(self, settings: Mapping[str, Any] | None) -> None:
        """Replace the initialize layer (``initializationOptions.settings`` or a configuration change)."""
        validate(settings or {})
        self._initialize = dict(settings or {})
        self._changed()

    def update(self, settings: Mapping[str, Any], session_id: str | None = None) -> None:
        """Merge a partial update into the session layer of ``session_id`` (or the initialize layer)."""
        validate(settings)
        if session_id is None:
            self._initialize = merge(self._initialize, settings)
        else:
            self._sessions[session_id] = merge(self._sessions.get(session_id, {}), settings)
        self._changed()

    def forget(self, session_id: str) -> None:
        """Drop a closed session's layer."""
        self._sessions.pop(session_id, None)
        self._changed()

    def _changed(self) -> None:
        self._generation += 1
        self._merged.clear()

    # ---------------------------------------------------------------- reads
    def layers(self, session_id: str | None = None, cwd: str | None = None) -> list[tuple[str, JsonDict]]:
        """``(name, partial settings)`` lowest first, the security rule applied."""
        global_ = self._file(self._global_path)
        project = self._file(Path(cwd) / ".pi" / "settings.json") if cwd else {}
        below = merge(DEFAULTS, global_)
        if "summarizer" in project and not (below.get("security") or {}).get("allowProjectSummarizerSettings"):
            log.warning("ignoring summarizer.* in %s/.pi/settings.json (security.allowProjectSummarizerSettings)", cwd)
            project = {k: v for k, v in project.items() if k != "summarizer"}
        session = self._sessions.get(session_id, {}) if session_id is not None else {}
        return [
            ("default", DEFAULTS),
            ("global", global_),
            ("project", project),
            ("initialize", self._initialize),
            ("session", session),
        ]

    def get(self, session_id: str | None = None, cwd: str | None = None) -> tuple[JsonDict, dict[str, str]]:
        """The merged settings and the source layer of every dotted leaf key."""
        layers = self.layers(session_id, cwd)
        merged = _merge_all(layers)
        return merged, sources_of(merged, layers)

    def settings(self, session_id: str | None = None, cwd: str | None = None) -> JsonDict:
        """The merged settings only (cached; read-only)."""
        key = (session_id, cwd, self._generation, self._stamp(self._global_path),
               self._stamp(Path(cwd) / ".pi" / "settings.json") if cwd else None)
        merged = self._merged.get(key)
        if merged is None:
            if len(self._merged) > 256:
                self._merged.clear()
            merged = self._merged[key] = _merge_all(self.layers(session_id, cwd))
        return merged

    def _stamp(self, path: Path) -> tuple[int, int] | None:
        self._file(path)
        return self._files[path].stamp

    def _file(self, path: Path) -> JsonDict:
        cached = self._files.get(path)
        if cached is None:
            cached = self._files[path] = _CachedFile(path)
        return cached.read()


def _merge_all(layers: list[tuple[str, JsonDict]]) -> JsonDict:
    merged: JsonDict = {}
    for _, layer in layers:
        merged = merge(merged, layer)
    return merged


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


def sources_of(merged: Mapping[str, Any], layers: list[tuple[str, JsonDict]]) -> dict[str, str]:
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


def validate(settings: Any) -> None:
    """Reject settings whose known keys have the wrong shape (:class:`InvalidParams` names the key)."""
    if not isinstance(settings, Mapping):
        raise InvalidParams("settings: expected an object")
    flat = flatten(settings)
    for key, choices in _CHOICES.items():
        if key in flat and flat[key] not in choices:
            raise InvalidParams(f"settings.{key}: expected one of {', '.join(map(repr, choices))}")
    for key in ("compaction.reserveTokens", "compaction.keepRecentTokens", "branchSummary.reserveTokens",
                "daemon.maxConcurrentSummaries", "daemon.maxMessageBytes"):
        value = flat.get(key)
        if key in flat and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidParams(f"settings.{key}: expected a non-negative integer")
    for key in ("contextWindow", "daemon.hookTimeoutSeconds", "daemon.reviewTimeoutSeconds"):
        value = flat.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value <= 0):
            raise InvalidParams(f"settings.{key}: expected a positive number or null")

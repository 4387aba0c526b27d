"""The daemon's settings layers, with their sources and issues.

Layers, lowest first: ``default`` < ``global`` (``<agent dir>/settings.json``)
< ``project`` (``<cwd>/.pi/settings.json``, only where Pi's trust store trusts
``cwd``: :mod:`pi_sessiond.settings.trust`) < ``initialize``
(``initializationOptions.settings``, then ``workspace/didChangeConfiguration``
and ``pi/updateSettings`` without a session) < ``session``
(``pi/updateSettings`` with a ``sessionId``). Merging, the project guard and
checking are :func:`pi_sessiond.settings.resolve`; the result is the typed
:class:`~pi_protocol.settings.Settings`.

The layers a client sends are refused whole when a known key is invalid
(:class:`InvalidParams` names it); a file's invalid key falls back to the
next lower layer, is logged once, and is listed in :meth:`SettingsStore.resolved`'s
``errors``. Files are stat'ed at most every :data:`RECHECK_SECONDS` and re-read
when their mtime or size changes; results are cached until a layer changes
(every request reads them).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pi_protocol import unstructure
from pi_protocol.base import JsonDict
from pi_protocol.results import SettingsResult
from pi_protocol.settings import Settings
from pi_sessiond.errors import InvalidParams
from pi_sessiond.settings import DEFAULT_LAYER, Layer, Resolved, first_problem, merge, project_layer, resolve
from pi_sessiond.settings.files import global_path, project_path, read_json_file
from pi_sessiond.settings.redact import redact_settings
from pi_sessiond.settings.trust import trust_decisions, trust_path
from pi_sessiond.settings.window import is_contradiction

log = logging.getLogger("pi_sessiond.service.settings")

RECHECK_SECONDS = 0.5
_CACHE_LIMIT = 256


class _CachedFile:
    """A JSON object file, re-read only when its (mtime, size) changes.

    The file is stat'ed at most every :data:`RECHECK_SECONDS`: a hand edit of a
    settings file takes effect within that time, without a syscall per request.
    """

    def __init__(self, path: Path, reader: Callable[[Path], Any] = read_json_file) -> None:
        self.path = path
        self._reader = reader
        self._stamp: tuple[int, int] | None = None
        self._data: Any = {}
        self._checked = -RECHECK_SECONDS

    @property
    def stamp(self) -> tuple[int, int] | None:
        """``(mtime_ns, size)`` at the last read, ``None`` when missing."""
        return self._stamp

    def read(self) -> Any:
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
            self._data = self._reader(self.path)
            self._stamp = stamp
        return self._data


#: ``summarizer.*`` keys a network client (TCP, WebSocket) may set only with ``security.allowWireApiKeyEnv``.
WIRE_GUARDED = ("apiKeyEnv", "baseUrl", "headers")


class SettingsStore:
    """All settings layers; :meth:`settings` merges them for one session (or none).

    ``network_client``: the layers a client sends come over TCP or WebSocket, so
    they may not name the key's variable, redirect the summarizer or add
    headers (:data:`WIRE_GUARDED`) unless the global file sets
    ``security.allowWireApiKeyEnv`` (a stdio client was launched by the user).
    """

    def __init__(self, initialize: Mapping[str, Any] | None = None, *, network_client: bool = False) -> None:
        self._network_client = network_client
        self._initialize: JsonDict = dict(initialize or {})
        self._sessions: dict[str, JsonDict] = {}
        self._files: dict[Path, _CachedFile] = {}
        self._global_path = global_path()
        self._trust_path = trust_path()
        self._generation = 0
        self._cache: dict[tuple[Any, ...], Resolved] = {}
        self._reported: set[tuple[str, str, str]] = set()

    # ------------------------------------------------------------- updates
    def set_initialize(self, settings: Mapping[str, Any] | None) -> None:
        """Replace the initialize layer (``initializationOptions.settings`` or a configuration change)."""
        _refuse_invalid(settings or {})
        self._refuse_over_wire(settings or {})
        self._initialize = dict(settings or {})
        self._changed()
        self.resolved()  # its issues (budgets that fill contextWindow included) are logged at initialize

    def update(self, settings: Mapping[str, Any], session_id: str | None = None) -> None:
        """Merge a partial update into the session layer of ``session_id`` (or the initialize layer)."""
        _refuse_invalid(settings)
        self._refuse_over_wire(settings)
        if session_id is None:
            self._initialize = merge(self._initialize, settings)
        else:
            self._sessions[session_id] = merge(self._sessions.get(session_id, {}), settings)
        self._changed()

    def _refuse_over_wire(self, settings: Mapping[str, Any]) -> None:
        """:class:`InvalidParams` when a network client sets a :data:`WIRE_GUARDED` key without the global right."""
        summarizer = settings.get("summarizer")
        if not self._network_client or not isinstance(summarizer, Mapping):
            return
        named = [key for key in WIRE_GUARDED if key in summarizer]
        if not named:
            return
        below = resolve([DEFAULT_LAYER, Layer("global", self._read(self._global_path))])
        if not below.settings.security.allow_wire_api_key_env:
            raise InvalidParams(
                f"settings.summarizer.{named[0]}: may not be set over a network connection unless "
                "security.allowWireApiKeyEnv is true in the global settings file"
            )

    def forget(self, session_id: str) -> None:
        """Drop a closed session's layer."""
        self._sessions.pop(session_id, None)
        self._changed()

    def _changed(self) -> None:
        self._generation += 1
        self._cache.clear()

    # ---------------------------------------------------------------- reads
    def settings(self, session_id: str | None = None, cwd: str | None = None) -> Settings:
        """The typed settings in force for ``session_id`` in ``cwd`` (or daemon-wide, without them)."""
        return self.resolved(session_id, cwd).settings

    def result(self, session_id: str | None, cwd: str | None, *, sources: bool = True) -> SettingsResult:
        """``pi/getSettings`` (``pi/updateSettings`` without ``sources``): the merged settings, redacted,
        with each leaf key's source and the files' issues."""
        resolved = self.resolved(session_id, cwd)
        shown = redact_settings(unstructure(resolved.settings))
        if not sources:
            return SettingsResult(settings=shown)
        return SettingsResult(settings=shown, sources=resolved.sources, errors=list(resolved.errors))

    def resolved(self, session_id: str | None = None, cwd: str | None = None) -> Resolved:
        """The settings, the source layer of every dotted leaf key, and the issues of the files."""
        project = project_path(cwd) if cwd else None
        own = session_id if session_id in self._sessions else None  # no layer of its own: shared with its cwd
        key = (own, cwd, self._generation, self._stamp(self._global_path),
               self._stamp(project) if project is not None else None, self._stamp(self._trust_path))
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) > _CACHE_LIMIT:
                self._cache.clear()
            cached = self._cache[key] = resolve(self.layers(session_id, cwd))
            self._report(cached)
        return cached

    def layers(self, session_id: str | None = None, cwd: str | None = None) -> list[Layer]:
        """The raw layers, lowest first (the project guard is applied when they are resolved).

        The project layer is refused when Pi's trust store does not trust ``cwd``.
        """
        global_data = self._read(self._global_path)
        session = self._sessions.get(session_id, {}) if session_id is not None else {}
        project = Layer("project", {})
        if cwd:
            path = project_path(cwd)
            project = project_layer(cwd, self._read(path), str(path), global_data, self._trust)
        return [
            DEFAULT_LAYER,
            Layer("global", global_data, str(self._global_path)),
            project,
            Layer("initialize", self._initialize),
            Layer("session", session),
        ]

    def _report(self, resolved: Resolved) -> None:
        """Log each issue once (a file is re-resolved whenever anything changes)."""
        for issue in resolved.errors:
            seen = (issue.file, issue.key, issue.message)
            if seen not in self._reported:
                self._reported.add(seen)
                note = "" if is_contradiction(issue) else " (a lower layer's value is used)"
                log.warning("settings %s: %s: %s%s", issue.file, issue.key, issue.message, note)

    def _stamp(self, path: Path) -> tuple[int, int] | None:
        self._read(path)
        return self._files[path].stamp

    def _read(self, path: Path) -> Any:
        cached = self._files.get(path)
        if cached is None:
            reader = trust_decisions if path == self._trust_path else read_json_file
            cached = self._files[path] = _CachedFile(path, reader)
        return cached.read()

    def _trust(self) -> Any:
        return self._read(self._trust_path)


def _refuse_invalid(settings: Any) -> None:
    """:class:`InvalidParams` naming the first invalid known key of a client's layer."""
    problem = first_problem(settings)
    if problem is not None:
        raise InvalidParams(problem)

"""Pi's project trust store, read the way Pi 1.6.0 reads it.

Pi keeps one decision per folder in ``<agent dir>/trust.json``: a JSON object
whose keys are absolute, symlink-resolved folder paths and whose values are
``true`` (trusted), ``false`` (not trusted) or ``null`` (no decision). The
decision for a ``cwd`` is the one of the nearest folder, ``cwd`` first, then
each parent up to ``/``, that holds ``true`` or ``false``. Without one, Pi
falls back to the global setting ``defaultProjectTrust`` (``"always"``,
``"never"``, or ``"ask"``, its default); the daemon has nobody to ask, so only
``"always"`` trusts.

Contract of :func:`untrusted_reason`: ``None`` when Pi would read the project
settings of ``cwd``, else a sentence saying why not (an unreadable or invalid
trust file trusts nothing, as Pi refuses to start on one).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pi_sessiond.store.layout import agent_dir


def trust_path() -> Path:
    """``<agent dir>/trust.json`` (Pi's ``ProjectTrustStore``)."""
    return agent_dir() / "trust.json"


def read_trust_file(path: Path) -> dict[str, bool | None]:
    """The decisions of a trust file; ``{}`` when it is missing. Raises ``ValueError`` when it is invalid."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected an object")
    for key, value in data.items():
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{path}: the value for {json.dumps(key)} must be true, false or null")
    return data


def decision_for(decisions: Mapping[str, bool | None], cwd: str) -> bool | None:
    """The nearest folder's decision for ``cwd`` (itself, then its parents), ``None`` when there is none."""
    by_path = {os.path.abspath(key): value for key, value in decisions.items() if isinstance(value, bool)}
    current = _canonical(cwd)
    while True:
        if current in by_path:
            return by_path[current]
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def untrusted_reason(cwd: str, decisions: Mapping[str, Any] | str, default_trust: Any) -> str | None:
    """Why the project settings of ``cwd`` are not applied, or ``None`` when Pi trusts ``cwd``.

    ``decisions`` is the trust file's content, or the message of why it could
    not be read; ``default_trust`` is the global ``defaultProjectTrust`` value.
    """
    if isinstance(decisions, str):
        return f"ignored: Pi's trust store is unusable ({decisions}), so no project is trusted"
    decision = decision_for(decisions, cwd)
    if decision is True:
        return None
    if decision is False:
        return f"ignored: Pi's trust store ({trust_path()}) does not trust {cwd}"
    if default_trust == "always":
        return None
    return (f"ignored: {cwd} is not trusted in Pi's trust store ({trust_path()}); "
            "trust the folder in Pi to apply its settings")


def _canonical(cwd: str) -> str:
    try:
        return os.path.realpath(cwd, strict=True)
    except OSError:
        return os.path.abspath(cwd)


def trust_decisions(path: Path | None = None) -> dict[str, bool | None] | str:
    """The trust file's decisions, or why they cannot be read (a sentence)."""
    try:
        return read_trust_file(path or trust_path())
    except ValueError as exc:
        return str(exc)

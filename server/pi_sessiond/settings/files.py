"""Reading a settings file: its JSON object, or ``{}`` (with a warning) when it is unusable."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from pi_protocol.base import JsonDict
from pi_sessiond.store.layout import agent_dir

log = logging.getLogger("pi_sessiond.settings")


def global_path() -> Path:
    """``<agent dir>/settings.json`` (Pi's global settings)."""
    return agent_dir() / "settings.json"


def project_path(cwd: str) -> Path:
    """``<cwd>/.pi/settings.json`` (Pi's project settings)."""
    return Path(cwd) / ".pi" / "settings.json"


def read_json_file(path: Path) -> JsonDict:
    """A JSON object file's content; ``{}`` when missing, or (logged) unreadable or not an object."""
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

"""``pi-sessiond settings [--json]``: the settings in force, where each value came from, and any problems.

Layers, lowest first: the defaults, then ``~/.pi/agent/settings.json`` (Pi's
global file; ``$PI_CODING_AGENT_DIR`` moves it). A session's project file
(``<cwd>/.pi/settings.json``) counts only for that session:
``pi-sessiond call --open FILE pi/getSettings`` shows it. A value a file gets
wrong is listed with its file, key and value; the lower layer's value is used.
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Iterator
from typing import Any

from pi_protocol import unstructure
from pi_protocol.params import GetSettingsParams
from pi_sessiond.cli.common import print_json
from pi_sessiond.cli.local import local_daemon

NAME = "settings"
HELP = "the settings in force, where each value came from, and problems with their file"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the pi/getSettings result as JSON")


def run(args: argparse.Namespace) -> int:
    logging.getLogger("pi_sessiond.service.settings").setLevel(logging.ERROR)  # listed below instead
    with local_daemon() as local:
        result = local.service.get_settings(GetSettingsParams())
    if args.json:
        print_json(unstructure(result))
        return 0
    sources = result.sources or {}
    for key, value in leaves(result.settings):
        print(f"{key} = {json.dumps(value, ensure_ascii=False)}  ({sources.get(key, 'default')})")
    for issue in result.errors or []:
        print(f"problem: {issue.file}: {issue.key}: {issue.message}")
    return 0


def leaves(tree: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(dotted key, value)`` for every leaf of the settings tree (an empty object is a leaf)."""
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value

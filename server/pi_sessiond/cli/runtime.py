"""The command-line flags that are settings: they become the ``initialize`` layer of the in-process service."""

from __future__ import annotations

import argparse
from typing import get_args

from pi_protocol.base import JsonDict
from pi_protocol.settings import Provider


def add_summarizer_arguments(parser: argparse.ArgumentParser) -> None:
    """``--provider/--model/--base-url/--api-key-env`` (override settings.json)."""
    group = parser.add_argument_group("summarizer (default: settings.json, else offline)")
    group.add_argument("--provider", choices=get_args(Provider), help="summarizer provider")
    group.add_argument("--model", help="summarizer model id")
    group.add_argument("--base-url", help="provider base URL (OpenAI-compatible: ends in /v1)")
    group.add_argument("--api-key-env", metavar="NAME", help="environment variable that holds the API key")


def flag_settings(args: argparse.Namespace, extra: JsonDict | None = None) -> JsonDict:
    """The settings the flags give (only those given), plus ``extra``."""
    summarizer = {
        key: value
        for key, value in (
            ("provider", getattr(args, "provider", None)),
            ("model", getattr(args, "model", None)),
            ("baseUrl", getattr(args, "base_url", None)),
            ("apiKeyEnv", getattr(args, "api_key_env", None)),
        )
        if value is not None
    }
    settings: JsonDict = {"summarizer": summarizer} if summarizer else {}
    return {**settings, **(extra or {})}

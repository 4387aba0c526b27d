"""Settings and summarizer for the commands that summarize (compact, navigate, demo)."""

from __future__ import annotations

import argparse
from typing import Any, get_args

from pi_protocol.settings import Provider, Settings
from pi_sessiond.cli.common import CliError
from pi_sessiond.settings import first_problem, load_settings
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.config import summarizer_settings
from pi_sessiond.summarizers.factory import make_summarizer

JsonDict = dict[str, Any]


def add_summarizer_arguments(parser: argparse.ArgumentParser) -> None:
    """``--provider/--model/--base-url/--api-key-env`` (override settings.json)."""
    group = parser.add_argument_group("summarizer (default: settings.json, else offline)")
    group.add_argument("--provider", choices=get_args(Provider), help="summarizer provider")
    group.add_argument("--model", help="summarizer model id")
    group.add_argument("--base-url", help="provider base URL (OpenAI-compatible: ends in /v1)")
    group.add_argument("--api-key-env", metavar="NAME", help="environment variable that holds the API key")


def settings_for(args: argparse.Namespace, cwd: str | None, extra: JsonDict | None = None) -> Settings:
    """Layered settings for a session in ``cwd`` plus the command-line overrides (refused when invalid)."""
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
    overrides: JsonDict = {"summarizer": summarizer} if summarizer else {}
    if extra:
        overrides.update(extra)
    problem = first_problem(overrides)
    if problem is not None:
        raise CliError(problem, 2)
    return load_settings(cwd or None, overrides).settings


def summarizer_for(settings: Settings) -> Summarizer:
    """The configured summarizer (raises ``SummarizerConfigError`` when unusable)."""
    return make_summarizer(summarizer_settings(settings.summarizer))

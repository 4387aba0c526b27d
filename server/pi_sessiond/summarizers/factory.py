"""Build the configured summarizer from ``summarizer.*`` settings."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import get_args

from pi_protocol.settings import Provider

from .anthropic import AnthropicSummarizer
from .auth import resolve_api_key
from .base import Summarizer
from .config import SummarizerSettings
from .errors import SummarizerConfigError
from .openai import OpenAISummarizer

PROVIDERS: tuple[str, ...] = get_args(Provider)


def make_summarizer(settings: SummarizerSettings, environ: Mapping[str, str] | None = None) -> Summarizer:
    """The summarizer for ``settings.provider``.

    Raises :class:`SummarizerConfigError` for an unknown provider (the message
    lists the valid ones), a network provider without ``summarizer.model``, an
    ``apiKeyEnv`` naming an unset variable, or a missing offline module.
    ``environ`` replaces ``os.environ`` for the key lookup (tests).
    """
    provider = settings.provider
    if provider == "offline":
        return _offline()
    if provider not in PROVIDERS:
        raise SummarizerConfigError(
            f"unknown summarizer.provider {provider!r}; valid providers: {', '.join(PROVIDERS)}"
        )
    if not settings.model:
        raise SummarizerConfigError(f"summarizer.model is required for provider {provider}")
    api_key = resolve_api_key(settings, environ)
    if provider == "openai":
        return OpenAISummarizer(settings, api_key)
    return AnthropicSummarizer(settings, api_key)


def _offline() -> Summarizer:
    try:
        module = importlib.import_module("pi_sessiond.summarizers.offline")
    except ModuleNotFoundError as exc:
        if exc.name != "pi_sessiond.summarizers.offline":
            raise
        raise SummarizerConfigError("the offline summarizer is not available") from exc
    summarizer: Summarizer = module.OfflineSummarizer()
    return summarizer

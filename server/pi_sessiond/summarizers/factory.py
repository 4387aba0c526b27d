"""Build the configured summarizer from ``summarizer.*`` settings."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import get_args

from pi_protocol.settings import Provider

from .base import Summarizer
from .config import SummarizerSettings
from .errors import SummarizerConfigError

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
    return _network(settings, environ)


def _network(settings: SummarizerSettings, environ: Mapping[str, str] | None) -> Summarizer:
    # httpx and the providers load with the first network summarizer: a one-shot
    # offline command never pays their ~12 MB and ~20 ms.
    from .auth import resolve_api_key

    api_key = resolve_api_key(settings, environ)
    if settings.provider == "openai":
        from .openai import OpenAISummarizer

        return OpenAISummarizer(settings, api_key)
    from .anthropic import AnthropicSummarizer

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

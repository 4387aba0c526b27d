"""Where the summarizer's API key comes from. The key is never logged.

Order (first hit wins):

1. ``os.environ[summarizer.apiKeyEnv]`` when ``apiKeyEnv`` is set — and if
   that variable is unset or empty, a :class:`SummarizerConfigError` naming
   the *variable* (an explicit setting that cannot work is an error).
2. Only when the request goes to the provider's official host (``baseUrl``
   unset or on ``api.openai.com`` / ``api.anthropic.com``), so that a key
   stored for OpenAI is never sent to some other OpenAI-compatible server:
   a. Pi's ``auth.json`` (``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), entry
      ``{"type": "api_key", "key": K}`` for the provider. Like Pi, ``K`` names
      an environment variable if one is set, else it is the key itself.
      OAuth entries and ``!command`` keys are skipped (not cheap, and a
      subprocess is not ours to run).
   b. The conventional ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``.
3. Otherwise no key (``None``): fine for local OpenAI-compatible servers.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

import httpx

from .config import SummarizerSettings
from .errors import SummarizerConfigError

log = logging.getLogger("pi_sessiond.summarizers")

OFFICIAL_HOSTS = {"openai": "api.openai.com", "anthropic": "api.anthropic.com"}
CONVENTIONAL_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


def agent_dir(environ: Mapping[str, str] | None = None) -> Path:
    """Pi's agent directory: ``$PI_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pi/agent``."""
    env = os.environ if environ is None else environ
    configured = env.get("PI_CODING_AGENT_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".pi" / "agent"


def uses_official_host(settings: SummarizerSettings) -> bool:
    """Whether requests go to the provider's own API host."""
    host = OFFICIAL_HOSTS.get(settings.provider)
    if host is None:
        return False
    return not settings.base_url or httpx.URL(settings.base_url).host == host


def pi_auth_key(provider: str, environ: Mapping[str, str], directory: Path) -> str | None:
    """A plain API key for ``provider`` from Pi's ``auth.json``, or ``None``."""
    try:
        data = json.loads((directory / "auth.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    entry = data.get(provider) if isinstance(data, dict) else None
    if not isinstance(entry, dict) or entry.get("type") != "api_key":
        return None
    key = entry.get("key")
    if not isinstance(key, str) or not key or key.startswith("!"):
        return None
    log.debug("summarizer key for %s taken from %s", provider, directory / "auth.json")
    return environ.get(key) or key


def resolve_api_key(settings: SummarizerSettings, environ: Mapping[str, str] | None = None) -> str | None:
    """The key for ``settings`` (see the module docstring), or ``None``."""
    env = os.environ if environ is None else environ
    if settings.api_key_env:
        value = env.get(settings.api_key_env)
        if not value:
            raise SummarizerConfigError(
                f"environment variable {settings.api_key_env} (summarizer.apiKeyEnv) is not set"
            )
        return value
    if not uses_official_host(settings):
        return None
    key = pi_auth_key(settings.provider, env, agent_dir(env))
    if key:
        return key
    return env.get(CONVENTIONAL_ENV.get(settings.provider, "")) or None

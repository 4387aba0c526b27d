"""``summarizer.*`` settings (PROTOCOL.md "Settings") as the summarizers take them.

The keys, defaults and allowed values are :class:`pi_protocol.settings.SummarizerSection`
(the settings tree); :class:`SummarizerSettings` adds the HTTP layer's retry
policy, which is not a setting (yet). The key itself is never a setting:
``api_key_env`` names the environment variable that holds it.
"""

from __future__ import annotations

import attrs

from pi_protocol.settings import SummarizerSection


@attrs.frozen(kw_only=True)
class SummarizerSettings(SummarizerSection):
    """How to reach the summarizer model, and how often to retry it."""

    max_retries: int = 3
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0


def summarizer_settings(section: SummarizerSection) -> SummarizerSettings:
    """``summarizer.*`` of the settings tree, with the default retry policy."""
    return SummarizerSettings(**{f.name: getattr(section, f.name) for f in attrs.fields(SummarizerSection)})

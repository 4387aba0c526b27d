"""``summarizer.*`` settings as the summarizers take them.

The keys, defaults and allowed values are :class:`pi_protocol.settings.SummarizerSection`
(the settings tree). The key itself is never a setting: ``api_key_env`` names
the environment variable that holds it. Retries are not the summarizers'
business (``retry.*`` drives :mod:`pi_sessiond.summarizers.retry`).
"""

from __future__ import annotations

import attrs

from pi_protocol.settings import SummarizerSection


@attrs.frozen(kw_only=True)
class SummarizerSettings(SummarizerSection):
    """How to reach the summarizer model."""


def summarizer_settings(section: SummarizerSection) -> SummarizerSettings:
    """``summarizer.*`` of the settings tree, as the providers take it."""
    return SummarizerSettings(**{f.name: getattr(section, f.name) for f in attrs.fields(SummarizerSection)})

"""``summarizer.*`` settings (PROTOCOL.md "Settings").

The key itself is never a setting: ``api_key_env`` names the environment
variable that holds it. Defaults: provider ``offline`` (no network).
"""

from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class SummarizerSettings:
    """How to reach the summarizer model."""

    provider: str = "offline"
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    context_window: int = 128000
    max_tokens: int | None = None
    headers: dict[str, str] = attrs.field(factory=dict)
    timeout_seconds: float = 120.0
    max_retries: int = 3
    retry_base_delay: float = 1.0
    retry_max_delay: float = 30.0

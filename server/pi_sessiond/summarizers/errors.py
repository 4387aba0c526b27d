"""Summarizer failures, translated at the provider boundary.

Messages never contain an API key: providers build them from the status and
the provider's own error text, and :func:`redact` scrubs any secret that a
provider echoes back.
"""

from __future__ import annotations

from collections.abc import Iterable


class SummarizerError(Exception):
    """The summarizer failed (after its retries). ``status`` is the HTTP status, if any."""

    reason = "summarizerFailed"

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.retryable = retryable


class ContextLengthError(SummarizerError):
    """The summarizer's own request was too long for its model."""


class SummarizerConfigError(SummarizerError):
    """The summarizer settings are unusable (unknown provider, missing model or key)."""


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with every non-trivial secret replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text

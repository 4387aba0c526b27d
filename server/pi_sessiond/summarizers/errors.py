"""Summarizer failures, translated at the provider boundary.

Messages never contain an API key: providers build them from the status and
the provider's own error text, and :func:`redact` scrubs any secret that a
provider echoes back.
"""

from __future__ import annotations

from collections.abc import Iterable

from pi_sessiond.errors import SummarizerFailed


class SummarizerError(SummarizerFailed):
    """The summarizer failed (after its retries): ``summarizerFailed``.

    ``detail`` is the provider's (redacted) message and ``status`` the HTTP
    status, if any; both travel in ``data``. ``message``, what a user reads,
    says that the summarizer failed and why.
    """

    def __init__(self, detail: str, *, status: int | None = None, retryable: bool = False) -> None:
        super().__init__(f"the summarizer failed: {detail}", data={"status": status, "message": detail})
        self.detail = detail
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

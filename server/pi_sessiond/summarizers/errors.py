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


def redact(text: str, secrets: Iterable[str | None], *, cut: bool = False) -> str:
    """``text`` with every non-trivial secret replaced by ``***``.

    ``cut``: ``text`` was cut off (a body read up to a limit), so a secret's
    beginning (4 characters or more) at its very end is masked too. Mask
    first, truncate after (:func:`mask_then_truncate`): a key straddling the
    cut must never show its first characters.
    """
    kept = [s for s in secrets if s and len(s) >= 4]
    for secret in kept:
        text = text.replace(secret, "***")
    if cut:
        for secret in kept:
            for size in range(min(len(secret), len(text)) - 1, 3, -1):
                if text.endswith(secret[:size]):
                    text = text[:-size] + "***"
                    break
    return text


def mask_then_truncate(text: str, secrets: Iterable[str | None], limit: int, *, cut: bool = False) -> str:
    """``text`` masked (:func:`redact`) and only then cut to ``limit`` characters."""
    return redact(text, secrets, cut=cut)[:limit]

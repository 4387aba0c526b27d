"""The one retry layer of summarizer calls, driven by ``retry.*`` (as Pi 1.6.0's summaries).

Contract of :func:`with_retries`:

- It calls ``call`` once and, while the failure is transient and
  ``retry.enabled``, at most ``retry.maxRetries`` more times. No other layer
  retries (the HTTP providers make exactly one attempt).
- Transient (:func:`is_transient`): a :class:`SummarizerError` its provider
  marked ``retryable`` — overloaded, 408/409/425/429/5xx, connection failures,
  timeouts, truncated or malformed streams — unless its text says quota or
  billing (those do not pass by waiting). Context-length errors, other 4xx,
  configuration errors and cancellation never are.
- The n-th retry waits ``baseDelayMs * 2**(n-1)``, or the server's
  ``Retry-After`` when it sent one, and never more than ``maxAgentDelayMs``.
  Before each wait ``on_retry`` gets a :class:`RetryNotice` (the daemon shows
  it in ``$/progress``).
- When the retries are used up the last error is raised again, its message
  saying how many attempts were made.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from typing import TypeVar

import attrs

from pi_protocol.settings import RetrySettings

from .errors import ContextLengthError, SummarizerError

log = logging.getLogger("pi_sessiond.summarizers")
T = TypeVar("T")

_NOT_TRANSIENT = re.compile(r"insufficient_quota|quota exceeded|out of budget|billing", re.IGNORECASE)


@attrs.frozen(kw_only=True)
class RetryNotice:
    """A retry about to happen: attempt ``attempt`` of at most ``attempts``, after ``delay`` seconds."""

    attempt: int
    attempts: int
    delay: float
    reason: str

    @property
    def message(self) -> str:
        """One line for a progress report."""
        return f"retrying in {self.delay:g}s (attempt {self.attempt} of {self.attempts}): {self.reason}"


RetryCallback = Callable[[RetryNotice], None]


def is_transient(exc: BaseException) -> bool:
    """Whether waiting and asking again may help (see the module docstring)."""
    if not isinstance(exc, SummarizerError) or isinstance(exc, ContextLengthError) or not exc.retryable:
        return False
    return not _NOT_TRANSIENT.search(exc.detail)


def retry_delay(policy: RetrySettings, retry: int, retry_after: float | None = None) -> float:
    """Seconds before retry number ``retry`` (from 1): the server's wish or the doubling delay, capped."""
    cap = policy.max_agent_delay_ms / 1000
    if retry_after is not None:
        return min(retry_after, cap)
    delay: float = policy.base_delay_ms * 2 ** (retry - 1) / 1000
    return min(delay, cap)


async def with_retries(
    call: Callable[[], Awaitable[T]], policy: RetrySettings, on_retry: RetryCallback | None = None
) -> T:
    """``await call()``, retried on transient failures by ``policy``."""
    attempts = 1 + (max(0, policy.max_retries) if policy.enabled else 0)
    for attempt in range(1, attempts + 1):
        try:
            return await call()
        except SummarizerError as exc:
            if not is_transient(exc) or attempts == 1:
                raise
            if attempt == attempts:
                raise SummarizerError(
                    f"{exc.detail} (gave up after {attempts} attempts)", status=exc.status, retryable=True
                ) from exc
            notice = RetryNotice(
                attempt=attempt + 1,
                attempts=attempts,
                delay=retry_delay(policy, attempt, getattr(exc, "retry_after", None)),
                reason=exc.detail,
            )
            log.warning("summarizer attempt %d/%d failed: %s", attempt, attempts, notice.message)
            if on_retry is not None:
                on_retry(notice)
            await asyncio.sleep(notice.delay)
    raise AssertionError("unreachable")  # pragma: no cover

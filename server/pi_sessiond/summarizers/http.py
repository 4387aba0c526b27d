"""Client plumbing shared by the HTTP providers: one client, one attempt, error translation.

Contract of :meth:`HttpSummarizer.summarize`:

- One ``httpx.AsyncClient`` per summarizer; every network await is bounded by
  ``httpx.Timeout`` (connect ≤ 30 s, read/write/pool = ``timeout_seconds``)
  and the attempt as a whole by :attr:`HttpSummarizer.attempt_deadline`.
- Exactly one attempt. Retrying is the one retry layer's job
  (:mod:`pi_sessiond.summarizers.retry`, driven by ``retry.*``); this layer
  only classifies: errors it marks ``retryable`` are the attempt deadline,
  connect and read timeouts, connection resets, 408/409/425/429/5xx,
  malformed or truncated streams; on 429/503 the server's ``Retry-After``/``retry-after-ms`` travels
  as :attr:`ProviderError.retry_after`.
- Not retryable: other 4xx (:class:`SummarizerError` with the status and the
  provider's own message) and context-length errors (:class:`ContextLengthError`,
  recognised by the patterns of Pi's ``isContextOverflow``).
- An answer that stopped at the output limit or called a tool is a result
  (``stop_reason`` ``length`` / ``toolUse``), not an error: the pipeline
  refuses it (``summaryIncomplete``).
- Every error text is redacted (the API key and sensitive header values)
  before the exception is built, so no secret reaches a message, a log line or
  a traceback. Exceptions chain (``from``) only the httpx/JSON cause.
- ``CancelledError`` is never caught: ``async with client.stream(...)`` closes
  the response (and so the connection) on the way out, and it propagates.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import math
import re
import ssl
import time
from collections.abc import Iterable, Mapping
from typing import Any

import certifi
import httpx

from pi_protocol.base import JsonDict
from pi_protocol.settings import SENSITIVE_HEADER

from .base import ProgressCallback, SummaryRequest, SummaryResult
from .config import SummarizerSettings
from .errors import ContextLengthError, SummarizerConfigError, SummarizerError, mask_then_truncate, redact

MAX_ERROR_BODY = 64 * 1024
RETRYABLE_STATUS = frozenset({408, 409, 425, 429})
_SENSITIVE_HEADER = SENSITIVE_HEADER
MAX_ERROR_TEXT = 1000

# Pi's isContextOverflow (case-insensitive): a provider error matching one means the context was too long.
_OVERFLOW = re.compile(
    "|".join(
        [
            r"prompt is too long",
            r"input is too long for requested model",
            r"exceeds the context window",
            r"input token count.*exceeds the maximum",
            r"maximum prompt length is \d+",
            r"reduce the length of the messages",
            r"maximum context length is \d+ tokens",
            r"maximum context length",
            r"exceeds the limit of \d+",
            r"exceeds the available context size",
            r"greater than the context length",
            r"context window exceeds limit",
            r"exceeded model token limit",
            r"too large for model with \d+ maximum context length",
            r"model_context_window_exceeded",
            r"context[_ ]length[_ ]exceeded",
            r"too many tokens",
            r"token limit exceeded",
            r"^4(00|13)\s*(status code)?\s*\(no body\)",
        ]
    ),
    re.IGNORECASE,
)


def is_context_overflow(message: str, code: str | None = None) -> bool:
    """Whether a provider error means "the request is too long for the model"."""
    return code in {"context_length_exceeded", "model_context_window_exceeded"} or bool(_OVERFLOW.search(message))


class ProviderError(SummarizerError):
    """A :class:`SummarizerError` that may carry the server's requested retry delay."""

    def __init__(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status, retryable=retryable)
        self.retry_after = retry_after


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``Retry-After`` (seconds or HTTP-date)."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every client: building one (and loading the CA bundle)
    costs ~45 ms, which would block the event loop at the start of every summary."""
    return ssl.create_default_context(cafile=certifi.where())


def make_timeout(timeout_seconds: float) -> httpx.Timeout:
    """Connect within ``min(timeout, 30)`` s; every read, write and pool wait within ``timeout``."""
    return httpx.Timeout(timeout_seconds, connect=min(timeout_seconds, 30.0))


def error_message_from_body(
    body: bytes, secrets: Iterable[str | None] = (), *, cut: bool = False
) -> tuple[str, str | None]:
    """The provider's own message (and error code) from an error body of either wire format.

    Secrets are masked in the whole body before anything is cut to
    :data:`MAX_ERROR_TEXT` (``cut``: the body itself was read only up to a limit).
    """
    text = redact(body.decode("utf-8", errors="replace").strip(), secrets, cut=cut)
    try:
        data = json.loads(text)
    except ValueError:
        return text[:MAX_ERROR_TEXT], None
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        message = error.get("message") or error.get("type") or text
        code = error.get("code") or error.get("type")
        return mask_then_truncate(str(message), secrets, MAX_ERROR_TEXT), str(code) if code is not None else None
    if isinstance(error, str):
        return error[:MAX_ERROR_TEXT], None
    return text[:MAX_ERROR_TEXT], None


class ProgressMeter:
    """Reports streamed output tokens, estimated as ``ceil(chars / 4)`` until the provider counts."""

    def __init__(self, callback: ProgressCallback | None) -> None:
        self._callback = callback
        self._chars = 0
        self._reported = 0

    def add_text(self, text: str) -> None:
        """Count streamed output text (answer or thinking)."""
        self._chars += len(text)
        self.report(math.ceil(self._chars / 4))

    def report(self, tokens: int) -> None:
        """Report ``tokens`` if larger than anything reported so far (never decreasing)."""
        if self._callback is not None and tokens > self._reported:
            self._reported = tokens
            self._callback(tokens)


class HttpSummarizer:
    """Base of the streaming HTTP providers. Subclasses build the request and read the stream."""

    provider = "http"

    def __init__(
        self,
        settings: SummarizerSettings,
        api_key: str | None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        if not settings.model:
            raise SummarizerConfigError(f"summarizer.model is required for provider {self.provider}")
        self.settings = settings
        self.model: str = settings.model
        self._api_key = api_key or None
        self._secrets = [self._api_key, *(v for k, v in settings.headers.items() if _SENSITIVE_HEADER.search(k))]
        self._client = httpx.AsyncClient(
            timeout=make_timeout(settings.timeout_seconds), transport=transport, verify=shared_ssl_context()
        )

    @property
    def name(self) -> str:
        """``<provider>`` plus the model, for logs."""
        return f"{self.provider}:{self.model}"

    @property
    def context_window(self) -> int:
        """The summarizer model's context window (``summarizer.contextWindow``)."""
        return self.settings.context_window

    @property
    def attempt_deadline(self) -> float:
        """Upper bound on one whole attempt (a slow trickle never holds a job forever)."""
        return max(600.0, 5 * self.settings.timeout_seconds)

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.aclose()

    def redact(self, text: str) -> str:
        """``text`` without the API key or sensitive header values."""
        return redact(text, self._secrets)

    def error(
        self, message: str, *, status: int | None = None, retryable: bool = False, retry_after: float | None = None
    ) -> ProviderError:
        """A redacted :class:`ProviderError` prefixed with the provider name."""
        text = self.redact(f"{self.provider}: {message}")
        return ProviderError(text, status=status, retryable=retryable, retry_after=retry_after)

    # -- what subclasses provide -------------------------------------------------

    def endpoint(self) -> str:
        """The URL to POST to."""
        raise NotImplementedError

    def request_headers(self) -> dict[str, str]:
        """Headers for every request (authentication, version, ``settings.headers``)."""
        raise NotImplementedError

    def build_body(self, request: SummaryRequest) -> JsonDict:
        """The JSON body for ``request``."""
        raise NotImplementedError

    async def read_stream(self, response: httpx.Response, meter: ProgressMeter) -> SummaryResult:
        """Parse a 2xx streaming response into a result, or raise a :class:`SummarizerError`."""
        raise NotImplementedError

    # -- the request loop --------------------------------------------------------

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        """Stream one summary in one attempt; see the module docstring."""
        body = request.body if request.body is not None else self.build_body(request)
        return await self._attempt(body, ProgressMeter(progress))

    async def _attempt(self, body: JsonDict, meter: ProgressMeter) -> SummaryResult:
        try:
            async with asyncio.timeout(self.attempt_deadline):
                async with self._client.stream(
                    "POST", self.endpoint(), json=body, headers=self.request_headers()
                ) as response:
                    if response.status_code >= 400:
                        raise await self._status_error(response)
                    if response.status_code >= 300:
                        raise self._redirect_error(response)
                    return await self.read_stream(response, meter)
        except TimeoutError as exc:
            raise self.error(f"no complete answer within {self.attempt_deadline:.0f}s", retryable=True) from exc
        except httpx.TimeoutException as exc:
            raise self.error(f"request timed out ({type(exc).__name__})", retryable=True) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError, httpx.ConnectError) as exc:
            raise self.error(f"connection failed ({type(exc).__name__}: {exc})", retryable=True) from exc
        except httpx.HTTPError as exc:
            raise self.error(f"request failed ({type(exc).__name__}: {exc})") from exc

    def _redirect_error(self, response: httpx.Response) -> SummarizerError:
        """A 3xx: redirects are never followed (the key would travel with them to the new host)."""
        where = response.headers.get("location") or "(no Location)"
        return self.error(f"HTTP {response.status_code}: the server redirects to {where[:300]}; redirects are not "
                          "followed, so the key stays with summarizer.baseUrl: set it to the final URL",
                          status=response.status_code)

    async def _status_error(self, response: httpx.Response) -> SummarizerError:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) >= MAX_ERROR_BODY:
                break
        message, code = error_message_from_body(bytes(body), self._secrets, cut=len(body) >= MAX_ERROR_BODY)
        return self.status_error(response.status_code, message, code, parse_retry_after(response.headers))

    def status_error(
        self, status: int | None, message: str, code: str | None = None, retry_after: float | None = None
    ) -> SummarizerError:
        """Translate a provider error (HTTP status or in-stream error event) into our exception."""
        shown = message or f"{status} status code (no body)"
        if is_context_overflow(shown, code) or (status in (400, 413) and not message):
            return ContextLengthError(self.redact(f"{self.provider}: {shown}"), status=status)
        retryable = status is not None and (status in RETRYABLE_STATUS or status >= 500)
        if status not in (429, 503):
            retry_after = None
        prefix = f"HTTP {status}: " if status is not None else ""
        return self.error(prefix + shown, status=status, retryable=retryable, retry_after=retry_after)


def merge_headers(base: dict[str, str], extra: Mapping[str, str]) -> dict[str, str]:
    """``base`` updated with ``extra`` (``settings.headers`` win, names compared case-insensitively)."""
    lowered = {key.lower() for key in extra}
    merged = {key: value for key, value in base.items() if key.lower() not in lowered}
    merged.update(extra)
    return merged


def as_int(value: Any) -> int:
    """``value`` as a non-negative int (usage fields may be missing or null)."""
    return value if isinstance(value, int) and value > 0 else 0

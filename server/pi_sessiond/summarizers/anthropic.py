"""Anthropic Messages provider.

Request: ``POST {baseUrl}/v1/messages`` (default ``https://api.anthropic.com``),
headers ``x-api-key`` (when there is a key), ``anthropic-version: 2023-06-01``,
``content-type``; body ``{model, max_tokens, system, messages, stream: true,
metadata}``. Rules:

- **No prompt-cache writes**: ``system`` is a plain string and the user
  content a plain string, so no ``cache_control`` appears anywhere. A one-shot
  summary is never re-read, and a cache write costs 1.25× input (Pi's
  ``cacheRetention: "none"``).
- **Fresh routing id**: ``metadata.user_id`` is a new ``uuid4().hex`` for
  every :meth:`summarize` call (reused by its retries). It is the only
  per-request identifier the Messages API accepts; a fresh opaque value keeps
  the summary from being grouped with the agent's own conversation and says
  nothing about the user (Pi sends a fresh ``sessionId`` per summary).
- **Output limit**: ``max_tokens`` is always sent: ``request.max_tokens``
  (the output-limit rule of ``pipeline.requests``).
- **Thinking**: when ``request.reasoning`` is a level (not ``None``/``off``),
  ``thinking: {type: "enabled", budget_tokens: B}`` with B = 1024 / 2048 /
  8192 / 16384 / 32000 for minimal / low / medium / high / xhigh, within that
  limit: if it leaves no room above B, B shrinks to ``max_tokens - 1024``
  (Pi's ``adjustMaxTokensForThinking``); below
  Anthropic's minimum of 1024 thinking is left off.
- ``stop_reason: "max_tokens"`` is reported as ``length``; a tool-use block
  (or ``stop_reason: "tool_use"``) as ``toolUse``.
- The answer is the text blocks joined with ``"\\n"``; thinking is not part
  of it but counts towards progress.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from pi_protocol import Usage
from pi_protocol.base import JsonDict

from .base import StopReason, SummaryRequest, SummaryResult
from .config import SummarizerSettings
from .http import HttpSummarizer, ProgressMeter, as_int, merge_headers
from .sse import aiter_sse, json_data

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32000}
MIN_THINKING_BUDGET = 1024
MIN_OUTPUT_TOKENS = 1024
ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


def thinking_plan(reasoning: str | None, max_tokens: int) -> tuple[int, int | None]:
    """``(max_tokens, budget_tokens or None)`` for a request; see the module docstring."""
    budget = THINKING_BUDGETS.get(reasoning or "")
    if budget is None:
        return max_tokens, None
    if max_tokens <= budget:
        budget = max(0, max_tokens - MIN_OUTPUT_TOKENS)
    return max_tokens, (budget if budget >= MIN_THINKING_BUDGET else None)


def anthropic_usage(data: JsonDict) -> Usage:
    """Our :class:`Usage` from the merged ``message_start``/``message_delta`` usage."""
    usage = Usage(
        input=as_int(data.get("input_tokens")),
        output=as_int(data.get("output_tokens")),
        cache_read=as_int(data.get("cache_read_input_tokens")),
        cache_write=as_int(data.get("cache_creation_input_tokens")),
    )
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    return usage


class _AnthropicStream:
    """What one streamed answer has said so far."""

    def __init__(self) -> None:
        self.blocks: dict[int, list[str]] = {}
        self.usage: JsonDict = {}
        self.stop_reason: str | None = None
        self.done = False
        self.tool_calls = False


class AnthropicSummarizer(HttpSummarizer):
    """Summaries from the Anthropic Messages API."""

    provider = "anthropic"

    def __init__(
        self,
        settings: SummarizerSettings,
        api_key: str | None = None,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(settings, api_key, transport=transport)
        self.base_url = (settings.base_url or DEFAULT_BASE_URL).rstrip("/")

    def endpoint(self) -> str:
        """``{baseUrl}/v1/messages``."""
        return f"{self.base_url}/v1/messages"

    def request_headers(self) -> dict[str, str]:
        """``x-api-key`` (when there is a key), the API version, then ``settings.headers``."""
        headers = {"content-type": "application/json", "accept": "text/event-stream", "anthropic-version": API_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return merge_headers(headers, self.settings.headers)

    def build_body(self, request: SummaryRequest) -> JsonDict:
        """The streaming Messages body (no ``cache_control``; fresh ``metadata.user_id``)."""
        max_tokens, budget = thinking_plan(request.reasoning, request.max_tokens)
        body: JsonDict = {
            "model": self.model,
            "max_tokens": max_tokens,
            "system": request.system_prompt,
            "messages": [{"role": "user", "content": request.prompt}],
            "stream": True,
            "metadata": {"user_id": uuid.uuid4().hex},
        }
        if budget is not None:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return body

    async def read_stream(self, response: httpx.Response, meter: ProgressMeter) -> SummaryResult:
        """Assemble text deltas; usage from ``message_start`` and ``message_delta``."""
        state = _AnthropicStream()
        # Read to the end of the body even after message_stop, so the connection is reused.
        async for event in aiter_sse(response.aiter_bytes()):
            if event.event == "ping" or state.done:
                continue
            data = json_data(event)
            self._apply(str(data.get("type") or event.event), data, state, meter)
        return self._result(state)

    def _apply(self, kind: str, data: JsonDict, state: _AnthropicStream, meter: ProgressMeter) -> None:
        if kind == "message_start":
            message = data.get("message") or {}
            state.usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            self._start_block(data, state)
        elif kind == "content_block_delta":
            self._delta(data, state, meter)
        elif kind == "message_delta":
            state.stop_reason = (data.get("delta") or {}).get("stop_reason") or state.stop_reason
            state.usage.update({k: v for k, v in (data.get("usage") or {}).items() if v is not None})
            meter.report(as_int(state.usage.get("output_tokens")))
        elif kind == "message_stop":
            state.done = True
        elif kind == "error":
            raise self._stream_error(data.get("error"))

    @staticmethod
    def _start_block(data: JsonDict, state: _AnthropicStream) -> None:
        block = data.get("content_block") or {}
        if block.get("type") in ("tool_use", "server_tool_use"):
            state.tool_calls = True
        elif block.get("type") == "text":
            state.blocks[as_int(data.get("index"))] = [str(block.get("text") or "")]

    @staticmethod
    def _delta(data: JsonDict, state: _AnthropicStream, meter: ProgressMeter) -> None:
        delta = data.get("delta") or {}
        kind = delta.get("type")
        if kind == "text_delta":
            text = str(delta.get("text") or "")
            state.blocks.setdefault(as_int(data.get("index")), []).append(text)
            meter.add_text(text)
        elif kind == "thinking_delta":
            meter.add_text(str(delta.get("thinking") or ""))
        elif kind == "input_json_delta":
            state.tool_calls = True

    def _stream_error(self, error: Any) -> Exception:
        if not isinstance(error, dict):
            return self.status_error(None, str(error))
        kind = str(error.get("type") or "")
        return self.status_error(ERROR_STATUS.get(kind), str(error.get("message") or kind), kind or None)

    def _result(self, state: _AnthropicStream) -> SummaryResult:
        if not state.done:
            raise self.error("truncated stream: ended before message_stop", retryable=True)
        text = "\n".join("".join(parts) for _, parts in sorted(state.blocks.items()))
        usage = anthropic_usage(state.usage)
        return SummaryResult(
            text=text, usage=usage, provider=self.provider, model=self.model, stop_reason=_stop_reason(state)
        )


def _stop_reason(state: _AnthropicStream) -> StopReason:
    if state.stop_reason == "max_tokens":
        return "length"
    if state.tool_calls or state.stop_reason == "tool_use":
        return "toolUse"
    return "stop"

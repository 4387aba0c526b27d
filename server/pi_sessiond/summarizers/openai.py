"""OpenAI-compatible Chat Completions provider (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, OpenRouter…).

Request: ``POST {baseUrl}/chat/completions`` (``baseUrl`` ends in ``/v1``,
default ``https://api.openai.com/v1``) with a system and a user message,
``stream: true`` and ``stream_options.include_usage`` so the last chunk
carries usage. No tools are offered.

Rules (documented because servers differ):

- Output cap: ``request.max_tokens`` (the output-limit rule of
  ``pipeline.requests``, ``summarizer.maxTokens`` included). It is sent as
  ``max_completion_tokens`` to api.openai.com and to reasoning models (OpenAI
  rejects ``max_tokens`` for those), else as ``max_tokens``, which every
  OpenAI-compatible local server understands. ``max_tokens_field`` overrides.
- ``reasoning_effort`` is sent only when ``request.reasoning`` is a level
  (not ``None``/``off``) **and** the model is a reasoning model: ``reasoning_model``
  when given, else guessed from the model id (last path segment): ``o1``/``o3``/
  ``o4``… (``o<digit>`` or ``o<digit>-…``) and ``gpt-5…`` except ``gpt-5…-chat…``.
  ``xhigh`` becomes ``high``; ``minimal`` becomes ``low`` for the o-series,
  which has no ``minimal``.
- ``prompt_cache_options: {"mode": "explicit"}`` is sent to models that bill
  cache writes and cache the newest message implicitly (:func:`explicit_cache_mode`:
  GPT-5.6 and later, ``gpt-daybreak-…``), so a one-shot summary writes no cache
  entry it never reads; older models reject the field and never get it.
- Usage: ``prompt_tokens_details.cached_tokens`` are cache reads and
  ``prompt_tokens_details.cache_write_tokens`` cache writes; input is the
  prompt tokens less both.
- No key, no ``Authorization`` header (fine for local servers).
- ``finish_reason: "length"`` is reported as stop reason ``length``; tool
  calls (or ``finish_reason: "tool_calls"``) as ``toolUse``; an empty answer
  is returned as it is (the pipeline's validation refuses it).
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from pi_protocol import Usage
from pi_protocol.base import JsonDict

from .base import StopReason, SummaryRequest, SummaryResult
from .config import SummarizerSettings
from .http import HttpSummarizer, ProgressMeter, as_int, merge_headers
from .sse import aiter_sse, json_data

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_O_SERIES = re.compile(r"^o\d+(-|$)")
_LEVELS = {"minimal", "low", "medium", "high", "xhigh"}
_GPT_VERSION = re.compile(r"^gpt-(\d+)(?:\.(\d+))?(?:-|$)")
EXPLICIT_CACHE_FROM = (5, 6)


def is_reasoning_model(model: str) -> bool:
    """Guess whether ``model`` accepts ``reasoning_effort`` (see the module docstring)."""
    name = model.rsplit("/", 1)[-1].lower()
    return bool(_O_SERIES.match(name)) or (name.startswith("gpt-5") and "chat" not in name)


def explicit_cache_mode(model: str) -> bool:
    """Whether ``model`` takes ``prompt_cache_options`` (GPT-5.6 and later, ``gpt-daybreak-…``)."""
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("gpt-daybreak-"):
        return True
    version = _GPT_VERSION.match(name)
    if version is None:
        return False
    return (int(version.group(1)), int(version.group(2) or 0)) >= EXPLICIT_CACHE_FROM


def reasoning_effort(level: str | None, model: str) -> str | None:
    """The ``reasoning_effort`` value for a Pi thinking level, or ``None`` to omit it."""
    if level not in _LEVELS:
        return None
    if level == "xhigh":
        return "high"
    if level == "minimal" and _O_SERIES.match(model.rsplit("/", 1)[-1].lower()):
        return "low"
    return level


def openai_usage(data: JsonDict) -> Usage:
    """Our :class:`Usage` from a Chat Completions ``usage`` object (cache reads and writes split out)."""
    details = data.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached, written = as_int(details.get("cached_tokens")), as_int(details.get("cache_write_tokens"))
    prompt = as_int(data.get("prompt_tokens"))
    output = as_int(data.get("completion_tokens"))
    uncached = max(0, prompt - cached - written)
    return Usage(input=uncached, cache_read=cached, cache_write=written, output=output,
                 total_tokens=uncached + cached + written + output)


class _OpenAIStream:
    """What one streamed answer has said so far."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.usage: Usage | None = None
        self.finish: str | None = None
        self.done = False
        self.tool_calls = False


class OpenAISummarizer(HttpSummarizer):
    """Summaries from any OpenAI-compatible Chat Completions endpoint."""

    provider = "openai"

    def __init__(
        self,
        settings: SummarizerSettings,
        api_key: str | None = None,
        *,
        reasoning_model: bool | None = None,
        max_tokens_field: str | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__(settings, api_key, transport=transport)
        self.base_url = (settings.base_url or DEFAULT_BASE_URL).rstrip("/")
        self.reasoning_model = is_reasoning_model(self.model) if reasoning_model is None else reasoning_model
        official = httpx.URL(self.base_url).host == "api.openai.com"
        default_field = "max_completion_tokens" if official or self.reasoning_model else "max_tokens"
        self.max_tokens_field = max_tokens_field or default_field

    def endpoint(self) -> str:
        """``{baseUrl}/chat/completions``."""
        return f"{self.base_url}/chat/completions"

    def request_headers(self) -> dict[str, str]:
        """Bearer auth when there is a key, then ``settings.headers``."""
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return merge_headers(headers, self.settings.headers)

    def build_body(self, request: SummaryRequest) -> JsonDict:
        """The streaming Chat Completions body (see the module docstring for the rules)."""
        body: JsonDict = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
            "stream": True,
            "stream_options": {"include_usage": True},
            self.max_tokens_field: request.max_tokens,
        }
        effort = reasoning_effort(request.reasoning, self.model) if self.reasoning_model else None
        if effort is not None:
            body["reasoning_effort"] = effort
        if explicit_cache_mode(self.model):
            body["prompt_cache_options"] = {"mode": "explicit"}
        return body

    async def read_stream(self, response: httpx.Response, meter: ProgressMeter) -> SummaryResult:
        """Assemble ``delta.content``; usage from the final chunk."""
        state = _OpenAIStream()
        # Read to the end of the body even after [DONE]: an unread response cannot go
        # back to the pool, and the next summary would pay a new connection (TLS) again.
        async for event in aiter_sse(response.aiter_bytes()):
            if state.done:
                continue
            if event.data.strip() == "[DONE]":
                state.done = True
                continue
            self._apply(json_data(event), state, meter)
        return self._result(state)

    def _apply(self, chunk: JsonDict, state: _OpenAIStream, meter: ProgressMeter) -> None:
        error = chunk.get("error")
        if error is not None:
            raise self._stream_error(error)
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict):
                self._apply_choice(choice, state, meter)
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            state.usage = openai_usage(usage)
            meter.report(state.usage.output)

    @staticmethod
    def _apply_choice(choice: JsonDict, state: _OpenAIStream, meter: ProgressMeter) -> None:
        delta = choice.get("delta") or {}
        content = delta.get("content")
        if isinstance(content, str) and content:
            state.parts.append(content)
            meter.add_text(content)
        for key in ("reasoning_content", "reasoning"):
            thinking = delta.get(key)
            if isinstance(thinking, str) and thinking:
                meter.add_text(thinking)
        if delta.get("tool_calls") or delta.get("function_call"):
            state.tool_calls = True
        if choice.get("finish_reason"):
            state.finish = str(choice["finish_reason"])

    def _stream_error(self, error: Any) -> Exception:
        if not isinstance(error, dict):
            return self.status_error(None, str(error))
        code = error.get("code")
        status = code if isinstance(code, int) else None
        return self.status_error(status, str(error.get("message") or ""), None if status else str(code or "") or None)

    def _result(self, state: _OpenAIStream) -> SummaryResult:
        if not state.done and state.finish is None:
            raise self.error("truncated stream: ended before the final chunk", retryable=True)
        text = "".join(state.parts)
        return SummaryResult(
            text=text, usage=state.usage or Usage(), provider=self.provider, model=self.model,
            stop_reason=_stop_reason(state),
        )


def _stop_reason(state: _OpenAIStream) -> StopReason:
    if state.finish == "length":
        return "length"
    if state.tool_calls or state.finish in ("tool_calls", "function_call"):
        return "toolUse"
    return "stop"

"""A loopback LLM provider: a real HTTP/1.1 server on 127.0.0.1 for provider tests.

It speaks OpenAI Chat Completions (``POST /v1/chat/completions``) and Anthropic
Messages (``POST /v1/messages``), streaming (SSE over chunked transfer
encoding) and not, and misbehaves on request: see :data:`MODES`.

Contracts:

* Every request is recorded before it is answered. ``received_at`` and
  ``disconnected_at`` are ``time.monotonic()`` readings (system-wide on Linux,
  so comparable with the test's own ``time.monotonic()``).
* ``disconnected_at`` is set only when the client goes away before the server
  finished its response; it is noticed at once, even while the server sleeps
  (``delay``) or hangs (``stall``), because the socket is watched for EOF.
* ``completed`` means the server wrote the whole response it meant to write
  (a deliberately short one for ``truncated``) and the client stayed. It is
  set just before the last write, so a client that has read the whole
  response already sees it, and cleared again if that write fails.
* Requests are validated as the real APIs do (JSON object, ``model``,
  ``messages``; Anthropic also ``max_tokens``, ``anthropic-version``, an API
  key, a sane thinking budget; OpenAI rejects ``stream_options`` without
  ``stream``). An invalid request gets the real 400/401 and does not consume a
  scripted fault.
* Token counts are deterministic: :func:`count_tokens` (4 characters a token)
  of every string in ``system`` and ``messages`` in, of the answer out.
* Prompt caching is each API's own (:mod:`tests.loopback_cache`, on the fake
  clock :attr:`LoopbackProvider.cache`): OpenAI's automatic prefix cache,
  Anthropic's ``cache_control`` breakpoints. A request without
  ``cache_control`` or below 1024 tokens reads and writes nothing. Every
  answered request records the usage it reported (:attr:`RecordedRequest.usage`).
* ``windows`` maps a model name to its context window: a request to that model
  whose prompt counts more tokens is answered with the ``context_length`` error
  (in place of the scripted fault, which stays queued).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import copy
import dataclasses
import http
import itertools
import json
import math
import os
import signal
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from tests.loopback_cache import CacheUsage, PromptCache

MODES = frozenset(
    {
        "ok",  # a normal answer
        "delay",  # a normal answer after ``Fault.delay`` seconds (1 s when unset)
        "stall",  # headers and half the answer, then silence until the client leaves
        "429",  # rate limited, with ``Retry-After`` (``Fault.retry_after``, 1 s when unset)
        "500",  # internal error
        "503",  # overloaded
        "context_length",  # the 400 each API sends when the prompt is too long
        "reset",  # the connection is reset (RST) without any response
        "reset_mid_stream",  # headers and half the answer, then a reset
        "malformed",  # a garbage line and a data line of invalid JSON mid-stream; the rest is valid
        "truncated",  # the stream ends cleanly without its final events / [DONE]
        "empty",  # a well-formed answer without any text
        "tool_only",  # a tool call and no text
        "length",  # the first half of the answer, stopped at the output limit (``length`` / ``max_tokens``)
    }
)
ERROR_MODES = ("429", "500", "503", "context_length")
DEFAULT_DELAY = 1.0
DEFAULT_RETRY_AFTER = 1.0
CHUNK_CHARS = 40
THINKING = "Reading the conversation to find the goal, the progress and the next steps."
TOOL_NAME, TOOL_ARGS = "read", '{"path": "README.md"}'

OPENAI_ERRORS = {
    "429": (429, "Rate limit reached for requests. Please try again later.", "requests", "rate_limit_exceeded"),
    "500": (500, "The server had an error while processing your request. Sorry about that!", "server_error", None),
    "503": (503, "The server is overloaded or not ready yet.", "server_error", None),
    "context_length": (
        400,
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "invalid_request_error",
        "context_length_exceeded",
    ),
}
ANTHROPIC_ERRORS = {
    "429": (429, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    "500": (500, "api_error", "Internal server error"),
    "503": (503, "overloaded_error", "Overloaded"),
    "context_length": (400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
}


@dataclass
class Fault:
    """How to answer one request: a mode from :data:`MODES` and its knobs.

    ``delay`` is waited before the first byte (any mode); ``retry_after`` is
    sent as ``Retry-After`` on error modes; ``status`` overrides the HTTP
    status of an error mode; ``reply`` replaces the default answer text;
    ``chunk_delay`` is waited between streamed events.
    """

    mode: str
    delay: float = 0
    retry_after: float | None = None
    status: int | None = None
    reply: str | Callable[[Any], str] | None = None
    chunk_delay: float = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; expected one of {sorted(MODES)}")


@dataclass
class RecordedRequest:
    """One request as the server saw it (see the module docstring for the clock)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    received_at: float
    disconnected_at: float | None = None
    completed: bool = False
    mode: str = "ok"
    answered_at: float | None = None  # when the end of the response was about to be written
    usage: dict[str, Any] | None = None  # the usage the answer reported (in the API's own shape)


def count_tokens(text: str) -> int:
    """The loopback's token count: one token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def prompt_tokens(body: Any) -> int:
    """The loopback's count of a request's prompt: every string of its ``system`` and ``messages``."""
    return count_tokens("".join(_strings(body.get("system"))) + "".join(_strings(body.get("messages"))))


def quote(text: str) -> str:
    """The excerpt of the first user message the default answer quotes: 80 chars, newlines as spaces."""
    return text[:80].replace("\r", " ").replace("\n", " ")


def first_user_text(body: Any) -> str:
    """The text of the first user message of an OpenAI or Anthropic request body ('' if none)."""
    for message in body.get("messages") or [] if isinstance(body, dict) else []:
        if isinstance(message, dict) and message.get("role") == "user":
            return "".join(_strings(message.get("content")))
    return ""


def default_reply(body: Any) -> str:
    """A valid structured summary quoting the request (turn-prefix headings when the prompt asks for them)."""
    user = first_user_text(body)
    line = f'- First user message: "{quote(user)}"'
    # Only the instructions after the conversation decide the format: a conversation may
    # itself quote an earlier split-turn summary with these headings.
    # The previous summary of a repeated compaction (between the two) may quote one too.
    marker = "\n# Instructions\n" if "\n# Instructions\n" in user else "</conversation>"
    if "## Original Request" in user.rpartition(marker)[2].rpartition("</previous-summary>")[2]:
        return (
            f"## Original Request\n{line}\n\n## Progress So Far\n- Loopback answer\n\n"
            "## Context Needed to Continue\n- (none)\n"
        )
    model = body.get("model", "?") if isinstance(body, dict) else "?"
    return (
        f"## Goal\n- Summarize the conversation (loopback model {model})\n\n"
        "## Constraints & Preferences\n- (none)\n\n"
        f"## Progress\n### Done\n- [x] Read the request\n\n### In Progress\n- [ ] Summarizing\n\n"
        "### Blocked\n- (none)\n\n"
        "## Key Decisions\n- **Loopback**: answers are generated by tests/loopback_provider.py\n\n"
        f"## Next Steps\n1. Continue the user's last request\n\n## Critical Context\n{line}\n"
    )


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for key, v in value.items() if key not in ("type", "role", "cache_control") for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _pieces(text: str) -> list[str]:
    return [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


@dataclass(frozen=True)
class _Plan:
    """The answer to give: everything the wire encoders need."""

    rid: str
    model: str
    text: str
    thinking: str
    tool: bool
    input_tokens: int
    include_usage: bool
    length: bool = False
    cache: CacheUsage = CacheUsage(0)

    @property
    def output_tokens(self) -> int:
        return count_tokens(self.text) + count_tokens(self.thinking) + (count_tokens(TOOL_ARGS) if self.tool else 0)


def _openai_finish(plan: _Plan) -> str:
    return "tool_calls" if plan.tool else "length" if plan.length else "stop"


def _anthropic_stop(plan: _Plan) -> str:
    return "tool_use" if plan.tool else "max_tokens" if plan.length else "end_turn"


class _OpenAI:
    """OpenAI Chat Completions: errors, validation, streamed chunks and the plain completion."""

    rid_header = "x-request-id"

    @staticmethod
    def error(status: int, message: str, kind: str, code: str | None, param: str | None = None) -> bytes:
        return _dumps({"error": {"message": message, "type": kind, "param": param, "code": code}})

    def fault(self, mode: str) -> tuple[int, bytes]:
        status, message, kind, code = OPENAI_ERRORS[mode]
        return status, self.error(
            status, message, kind, code, "messages" if code == "context_length_exceeded" else None
        )

    def validate(self, body: Any, headers: dict[str, str]) -> tuple[int, bytes] | None:
        problem = None
        if not isinstance(body, dict):
            problem = "We could not parse the JSON body of your request."
        elif not isinstance(body.get("model"), str):
            problem = "you must provide a model parameter"
        elif not isinstance(body.get("messages"), list) or not body["messages"]:
            problem = "Missing required parameter: 'messages'."
        elif body.get("stream_options") is not None and body.get("stream") is not True:
            problem = "The 'stream_options' parameter is only allowed when 'stream' is enabled."
        return None if problem is None else (400, self.error(400, problem, "invalid_request_error", None))

    def _chunk(self, plan: _Plan, delta: dict[str, Any] | None, finish: str | None = None) -> bytes:
        chunk: dict[str, Any] = {"id": plan.rid, "object": "chat.completion.chunk", "created": int(time.time())}
        chunk["model"] = plan.model
        chunk["choices"] = (
            [] if delta is None else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
        )
        if plan.include_usage:
            chunk["usage"] = self._usage(plan) if delta is None else None
        return b"data: " + _dumps(chunk) + b"\n\n"

    @staticmethod
    def _usage(plan: _Plan) -> dict[str, Any]:
        out = plan.output_tokens
        details: dict[str, int] = {"cached_tokens": plan.cache.read}
        if plan.cache.write:
            details["cache_write_tokens"] = plan.cache.write
        return {
            "prompt_tokens": plan.input_tokens,
            "completion_tokens": out,
            "total_tokens": plan.input_tokens + out,
            "prompt_tokens_details": details,
            "completion_tokens_details": {"reasoning_tokens": 0},
        }

    def stream(self, plan: _Plan) -> tuple[list[bytes], int]:
        """All SSE frames, and how many of them are the final ones ``truncated`` leaves out."""
        if plan.tool:
            call = {
                "index": 0,
                "id": "call_loopback",
                "type": "function",
                "function": {"name": TOOL_NAME, "arguments": ""},
            }
            frames = [self._chunk(plan, {"role": "assistant", "content": None, "tool_calls": [call]})]
            args = [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in _pieces(TOOL_ARGS)]
            frames += [self._chunk(plan, delta) for delta in args]
        else:
            frames = [self._chunk(plan, {"role": "assistant", "content": ""})]
            frames += [self._chunk(plan, {"content": p}) for p in _pieces(plan.text)]
        finals = [self._chunk(plan, {}, _openai_finish(plan))]
        finals += [self._chunk(plan, None)] if plan.include_usage else []
        return [*frames, *finals, b"data: [DONE]\n\n"], len(finals) + 1

    def complete(self, plan: _Plan) -> bytes:
        message: dict[str, Any] = {"role": "assistant", "content": plan.text, "refusal": None}
        if plan.tool:
            call = {"id": "call_loopback", "type": "function", "function": {"name": TOOL_NAME, "arguments": TOOL_ARGS}}
            message.update(content=None, tool_calls=[call])
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": _openai_finish(plan),
        }
        head = {"id": plan.rid, "object": "chat.completion", "created": int(time.time()), "model": plan.model}
        return _dumps({**head, "choices": [choice], "usage": self._usage(plan)})

    garbage = (b"this line is not server-sent events\n", b'data: {"id":"chatcmpl-broken","choices":[{"delta":\n\n')


class _Anthropic:
    """Anthropic Messages: errors, validation, streamed events and the plain message."""

    rid_header = "request-id"

    @staticmethod
    def error(kind: str, message: str) -> bytes:
        return _dumps({"type": "error", "error": {"type": kind, "message": message}})

    def fault(self, mode: str) -> tuple[int, bytes]:
        status, kind, message = ANTHROPIC_ERRORS[mode]
        return status, self.error(kind, message)

    def validate(self, body: Any, headers: dict[str, str]) -> tuple[int, bytes] | None:
        if "x-api-key" not in headers and "authorization" not in headers:
            return 401, self.error("authentication_error", "x-api-key header is required")
        problem = None
        thinking = body.get("thinking") if isinstance(body, dict) else None
        budget = (
            thinking.get("budget_tokens") if isinstance(thinking, dict) and thinking.get("type") == "enabled" else None
        )
        if "anthropic-version" not in headers:
            problem = "anthropic-version: header is required"
        elif not isinstance(body, dict):
            problem = "There was an error parsing the body of your request"
        else:
            missing = [f for f in ("model", "messages", "max_tokens") if f not in body]
            problem = f"{missing[0]}: Field required" if missing else None
        if problem is None and budget is not None and (not isinstance(budget, int) or budget < 1024):
            problem = "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        elif problem is None and budget is not None and body["max_tokens"] <= budget:
            problem = "`max_tokens` must be greater than `thinking.budget_tokens`"
        return None if problem is None else (400, self.error("invalid_request_error", problem))

    @staticmethod
    def _event(name: str, data: dict[str, Any]) -> bytes:
        return f"event: {name}\ndata: ".encode() + _dumps({"type": name, **data}) + b"\n\n"

    def _blocks(self, plan: _Plan) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if plan.thinking:
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(plan.thinking)]
            deltas.append({"type": "signature_delta", "signature": "loopback-signature"})
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        if plan.tool:
            start = {"type": "tool_use", "id": "toolu_loopback", "name": TOOL_NAME, "input": {}}
            blocks.append((start, [{"type": "input_json_delta", "partial_json": p} for p in _pieces(TOOL_ARGS)]))
        elif plan.text:
            blocks.append(
                ({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in _pieces(plan.text)])
            )
        return blocks

    @staticmethod
    def usage(plan: _Plan) -> dict[str, Any]:
        """The final usage of an answer (``message_start``'s, with the whole output)."""
        return {"input_tokens": plan.input_tokens - plan.cache.read - plan.cache.write,
                "cache_creation_input_tokens": plan.cache.write, "cache_read_input_tokens": plan.cache.read,
                "output_tokens": plan.output_tokens}

    def _start(self, plan: _Plan) -> tuple[dict[str, Any], dict[str, Any]]:
        usage = {**self.usage(plan), "output_tokens": 1}
        return {"id": plan.rid, "type": "message", "role": "assistant", "model": plan.model, "content": []}, usage

    def stream(self, plan: _Plan) -> tuple[list[bytes], int]:
        """All SSE events, and how many of them are the final ones ``truncated`` leaves out."""
        message, usage = self._start(plan)
        message |= {"stop_reason": None, "stop_sequence": None, "usage": usage}
        frames, blocks = [self._event("message_start", {"message": message})], self._blocks(plan)
        for index, (start, deltas) in enumerate(blocks):
            frames.append(self._event("content_block_start", {"index": index, "content_block": start}))
            frames += [self._event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
            frames.append(self._event("content_block_stop", {"index": index}))
        frames.insert(min(2, len(frames)), self._event("ping", {}))
        stop = {"stop_reason": _anthropic_stop(plan), "stop_sequence": None}
        frames.append(self._event("message_delta", {"delta": stop, "usage": {"output_tokens": plan.output_tokens}}))
        frames.append(self._event("message_stop", {}))
        return frames, 3 if blocks else 2

    def complete(self, plan: _Plan) -> bytes:
        message, usage = self._start(plan)
        if plan.thinking:
            message["content"].append(
                {"type": "thinking", "thinking": plan.thinking, "signature": "loopback-signature"}
            )
        if plan.tool:
            message["content"].append(
                {"type": "tool_use", "id": "toolu_loopback", "name": TOOL_NAME, "input": json.loads(TOOL_ARGS)}
            )
        elif plan.text:
            message["content"].append({"type": "text", "text": plan.text})
        usage["output_tokens"] = plan.output_tokens
        stop = _anthropic_stop(plan)
        return _dumps({**message, "stop_reason": stop, "stop_sequence": None, "usage": usage})

    garbage = (
        b"this line is not server-sent events\n",
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":\n\n',
    )


ROUTES: dict[str, Any] = {"/v1/chat/completions": _OpenAI(), "/v1/messages": _Anthropic()}
JSON, SSE = "application/json", "text/event-stream; charset=utf-8"


class _Aborted(Exception):
    """The server reset the connection on purpose."""


@dataclass
class _Request:
    method: str
    target: str
    headers: dict[str, str]
    raw: bytes
    keep_alive: bool


class _Conn:
    """One client connection: reads requests, writes responses, notices the client leaving."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.leftover = b""  # a byte of the next request, read while watching for EOF
        self.open = True
        self.finishing: Callable[[], None] = lambda: None  # called just before a response's last write

    async def read_request(self) -> _Request | None:
        """The next request, or None when the client closed the connection between requests."""
        try:
            head = self.leftover + await self.reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError):
            return None
        self.leftover = b""
        lines = head.decode("latin-1").split("\r\n")
        method, target, version = lines[0].split(" ", 2)
        headers: dict[str, str] = {}
        for line in filter(None, lines[1:]):
            name, _, value = line.partition(":")
            key, value = name.strip().lower(), value.strip()
            headers[key] = f"{headers[key]}, {value}" if key in headers else value
        raw = await self._read_body(headers)
        keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
        return _Request(method, target, headers, raw, keep)

    async def _read_body(self, headers: dict[str, str]) -> bytes:
        if "chunked" not in headers.get("transfer-encoding", "").lower():
            return await self.reader.readexactly(int(headers.get("content-length", "0")))
        parts = []
        while size := int((await self.reader.readuntil(b"\r\n")).split(b";")[0], 16):
            parts.append((await self.reader.readexactly(size + 2))[:-2])
        while await self.reader.readuntil(b"\r\n") != b"\r\n":
            pass  # trailers
        return b"".join(parts)

    @staticmethod
    def head(status: int, headers: dict[str, str], keep: bool) -> bytes:
        """A status line and headers."""
        try:
            phrase = http.HTTPStatus(status).phrase
        except ValueError:
            phrase = "Unknown"
        lines = [f"HTTP/1.1 {status} {phrase}", *(f"{k}: {v}" for k, v in headers.items())]
        lines.append(f"connection: {'keep-alive' if keep else 'close'}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def respond(self, status: int, headers: dict[str, str], body: bytes, keep: bool) -> bool:
        """A whole response with a Content-Length; returns ``keep``."""
        self.finishing()
        await self.send(self.head(status, {**headers, "content-length": str(len(body))}, keep) + body)
        return keep

    async def chunk(self, data: bytes) -> None:
        await self.send(b"%x\r\n%s\r\n" % (len(data), data))

    async def reset(self) -> None:
        """Flush what was written, then reset the connection (RST, not FIN) and raise :class:`_Aborted`."""
        while self.writer.transport.get_write_buffer_size():
            await asyncio.sleep(0.001)
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()
        self.open = False
        raise _Aborted

    async def watch(self, work: Coroutine[Any, Any, bool]) -> tuple[bool, float | None]:
        """Run ``work`` (it writes a response, returns keep-alive) until it ends or the client leaves.

        Returns ``(completed, disconnected_at)``. The socket is read while
        ``work`` runs: EOF or a reset there means the client went away, and
        ``work`` is cancelled at once.
        """
        task = asyncio.ensure_future(work)
        eof = asyncio.ensure_future(self.reader.read(1))
        try:
            await asyncio.wait({task, eof}, return_when=asyncio.FIRST_COMPLETED)
            if not task.done() and eof.exception() is None and eof.result():
                await asyncio.wait({task})  # the client already sent its next request
        except asyncio.CancelledError:
            task.cancel()
            eof.cancel()
            raise
        if task.done():
            await self._settle(eof)
            return self._outcome(task)
        left, self.open = time.monotonic(), False
        task.cancel()
        await asyncio.wait({task})
        if not task.cancelled():
            task.exception()
        return False, left

    async def _settle(self, eof: asyncio.Future[bytes]) -> None:
        eof.cancel()
        await asyncio.wait({eof})
        if eof.cancelled():
            return
        if eof.exception() is not None or not eof.result():
            self.open = False
        else:
            self.leftover += eof.result()

    def _outcome(self, task: asyncio.Future[bool]) -> tuple[bool, float | None]:
        exc = task.exception()
        if exc is None:
            self.open = self.open and task.result()
            return True, None
        self.open = False
        if isinstance(exc, _Aborted):
            return False, None
        if isinstance(exc, ConnectionError):
            return False, time.monotonic()
        raise exc


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


class LoopbackProvider:
    """The loopback server, in a background thread with its own event loop.

    Use it as a context manager (sync or async), or ``start()``/``stop()``.
    Every request to either API takes the next scripted :class:`Fault`, or the
    default one (``"ok"`` unless :meth:`set_default` says otherwise).
    """

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port
        self.base_url = ""
        self._lock = threading.Condition()
        self._records: list[RecordedRequest] = []
        self._queue: deque[Fault] = deque()
        self._default = Fault("ok")
        self._ids = itertools.count(1)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.cache = PromptCache()
        """Both APIs' prompt caches; ``cache.advance(seconds)`` moves their clock."""
        self.windows: dict[str, int] = {}

    def __enter__(self) -> LoopbackProvider:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def __aenter__(self) -> LoopbackProvider:
        return await asyncio.to_thread(self.start)

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.stop)

    def start(self) -> LoopbackProvider:
        """Bind and serve in a background thread; ``base_url`` is set on return."""
        if self._thread is not None:
            raise RuntimeError("the loopback provider is already running")
        ready = threading.Event()
        self._thread = threading.Thread(target=asyncio.run, args=(self._main(ready),), name="loopback", daemon=True)
        self._thread.start()
        ready.wait()
        if self._error is not None:
            self._thread = None
            raise self._error
        return self

    def stop(self) -> None:
        """Close every connection and the listening socket; wait for the thread."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        if self._loop is not None and self._stopping is not None:
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stopping.set)
        thread.join(10)

    def script(self, *modes: str | Fault) -> None:
        """Queue how the next requests behave, in order; after them the default applies again."""
        faults = [m if isinstance(m, Fault) else Fault(m) for m in modes]
        with self._lock:
            self._queue.extend(faults)

    def set_default(self, mode: str | Fault) -> None:
        """How requests behave once the script is used up."""
        with self._lock:
            self._default = mode if isinstance(mode, Fault) else Fault(mode)

    def clear(self) -> None:
        """Forget the recorded requests and the script."""
        with self._lock:
            self._records.clear()
            self._queue.clear()

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot (copies) of every request so far, oldest first."""
        with self._lock:
            return [copy.copy(r) for r in self._records]

    def wait_for(self, predicate: Callable[[RecordedRequest], bool], timeout: float = 30.0) -> RecordedRequest:
        """Block until a recorded request satisfies ``predicate``; a snapshot of the first that does."""
        match: list[RecordedRequest] = []

        def found() -> bool:
            match[:] = [r for r in map(copy.copy, self._records) if predicate(r)][:1]
            return bool(match)

        with self._lock:
            if not self._lock.wait_for(found, timeout):
                raise TimeoutError(f"no matching request within {timeout} s: {self._records!r}")
            return match[0]

    async def await_for(self, predicate: Callable[[RecordedRequest], bool], timeout: float = 30.0) -> RecordedRequest:
        """:meth:`wait_for` without blocking the caller's event loop (polls every 2 ms)."""
        deadline = time.monotonic() + timeout
        while (match := next((r for r in self.requests if predicate(r)), None)) is None:
            if time.monotonic() > deadline:
                raise TimeoutError(f"no matching request within {timeout} s: {self.requests!r}")
            await asyncio.sleep(0.002)
        return match

    async def _main(self, ready: threading.Event) -> None:
        try:
            server = await asyncio.start_server(self._serve, self.host, self.port, limit=1 << 20)
        except OSError as exc:
            self._error = exc
            ready.set()
            return
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        self.port = server.sockets[0].getsockname()[1]
        self.base_url = f"http://{self.host}:{self.port}"
        ready.set()
        async with server:
            await self._stopping.wait()
            server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        conn = _Conn(reader, writer)
        try:
            while conn.open and (request := await conn.read_request()) is not None:
                await self._handle(conn, request)
        except (ConnectionError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass  # a broken request or a client gone between requests: drop the connection
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _handle(self, conn: _Conn, req: _Request) -> None:
        body = _parse(req.raw)
        record = RecordedRequest(req.method, req.target, req.headers, body, time.monotonic())
        wire = ROUTES.get(req.target.split("?", 1)[0]) if req.method == "POST" else None
        invalid = (404, b"") if wire is None else wire.validate(body, req.headers)
        fault = (self._over_window(body) or self._next_fault()) if invalid is None else None
        record.mode = fault.mode if fault else "invalid"
        with self._lock:
            self._records.append(record)
            self._lock.notify_all()
        if wire is None:
            payload = _OpenAI.error(
                404, f"Unknown request URL: {req.method} {req.target}", "invalid_request_error", None
            )
            work = conn.respond(404, {"content-type": JSON}, payload, req.keep_alive)
        elif invalid is not None:
            work = conn.respond(invalid[0], {"content-type": JSON}, invalid[1], req.keep_alive)
        else:
            assert fault is not None
            work = self._respond(conn, wire, fault, body, req.keep_alive, record)
        conn.finishing = lambda: self._update(record, True, None)
        self._update(record, *await conn.watch(work))

    def _update(self, record: RecordedRequest, completed: bool, left: float | None) -> None:
        # set once before the last write too, so a client that has read the whole response sees completed=True
        with self._lock:
            record.completed, record.disconnected_at = completed, left
            if completed and record.answered_at is None:
                record.answered_at = time.monotonic()
            self._lock.notify_all()

    def _over_window(self, body: Any) -> Fault | None:
        window = self.windows.get(str(body.get("model"))) if isinstance(body, dict) else None
        return Fault("context_length") if window is not None and prompt_tokens(body) > window else None

    def _next_fault(self) -> Fault:
        with self._lock:
            return self._queue.popleft() if self._queue else self._default

    async def _respond(
        self, conn: _Conn, wire: Any, fault: Fault, body: dict[str, Any], keep: bool, record: RecordedRequest
    ) -> bool:
        await asyncio.sleep(fault.delay or (DEFAULT_DELAY if fault.mode == "delay" else 0))
        n = next(self._ids)
        headers = {wire.rid_header: f"req_loopback{n}"}
        if fault.mode == "reset":
            await conn.reset()
        if fault.mode in ERROR_MODES:
            status, payload = wire.fault(fault.mode)
            retry = DEFAULT_RETRY_AFTER if fault.retry_after is None and fault.mode == "429" else fault.retry_after
            if retry is not None:
                headers["retry-after"] = _seconds(retry)
            return await conn.respond(fault.status or status, {**headers, "content-type": JSON}, payload, keep)
        plan = _plan(wire, fault, body, f"{'chatcmpl-' if isinstance(wire, _OpenAI) else 'msg_'}loopback{n}")
        cached = self.cache.openai(body) if isinstance(wire, _OpenAI) else self.cache.anthropic(body)
        plan = dataclasses.replace(plan, input_tokens=cached.prompt or plan.input_tokens, cache=cached)
        with self._lock:
            record.usage = _OpenAI._usage(plan) if isinstance(wire, _OpenAI) else _Anthropic.usage(plan)
        if body.get("stream") is True:
            return await _stream(conn, wire, fault, headers, plan, keep)
        return await _complete(conn, wire.complete(plan), fault, headers, keep)


def _plan(wire: Any, fault: Fault, body: dict[str, Any], rid: str) -> _Plan:
    reply = fault.reply(body) if callable(fault.reply) else fault.reply
    text = "" if fault.mode == "empty" else default_reply(body) if reply is None else reply
    if fault.mode == "length":
        text = text[: len(text) // 2]
    thinking = body.get("thinking")
    thinks = (
        isinstance(wire, _Anthropic) and isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")
    )
    options = body.get("stream_options")
    usage = isinstance(options, dict) and bool(options.get("include_usage"))
    return _Plan(
        rid,
        str(body.get("model")),
        text,
        THINKING if thinks else "",
        fault.mode == "tool_only",
        prompt_tokens(body),
        usage,
        fault.mode == "length",
    )


async def _misbehave(conn: _Conn, mode: str) -> None:
    if mode == "stall":
        await asyncio.Future()  # until the client leaves or the server stops
    if mode == "reset_mid_stream":
        await conn.reset()


async def _stream(conn: _Conn, wire: Any, fault: Fault, headers: dict[str, str], plan: _Plan, keep: bool) -> bool:
    frames, finals = wire.stream(plan)
    if fault.mode == "malformed":
        frames[len(frames) // 2 : len(frames) // 2] = wire.garbage
    elif fault.mode == "truncated":
        frames = frames[:-finals]
    elif fault.mode in ("stall", "reset_mid_stream"):
        frames = frames[: max(1, len(frames) // 2)]
    sse = {**headers, "content-type": SSE, "cache-control": "no-cache", "transfer-encoding": "chunked"}
    await conn.send(conn.head(200, sse, keep))
    for i, frame in enumerate(frames):
        if i and fault.chunk_delay:
            await asyncio.sleep(fault.chunk_delay)
        await conn.chunk(frame)
    await _misbehave(conn, fault.mode)
    conn.finishing()
    await conn.send(b"0\r\n\r\n")
    return keep


async def _complete(conn: _Conn, payload: bytes, fault: Fault, headers: dict[str, str], keep: bool) -> bool:
    headers = {**headers, "content-type": JSON}
    if fault.mode in ("truncated", "stall", "reset_mid_stream"):
        head = conn.head(200, {**headers, "content-length": str(len(payload))}, False)
        if fault.mode == "truncated":
            conn.finishing()
        await conn.send(head + payload[: len(payload) // 2])
        await _misbehave(conn, fault.mode)
        return False  # truncated: close with the body half sent
    return await conn.respond(
        200, headers, payload[: len(payload) // 2] if fault.mode == "malformed" else payload, keep
    )


def main(argv: list[str] | None = None) -> int:
    """Serve until SIGTERM or EOF on stdin; the first stdout line is the base URL."""
    parser = argparse.ArgumentParser(prog="python -m tests.loopback_provider", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mode", choices=sorted(MODES), default="ok", help="how every request is answered")
    parser.add_argument(
        "--script", default="", help="comma-separated modes for the first requests; the knobs apply to all"
    )
    parser.add_argument("--delay", type=float, default=0, help="seconds before the first byte")
    parser.add_argument("--retry-after", type=float, default=None, help="Retry-After seconds on errors")
    parser.add_argument("--status", type=int, default=None, help="HTTP status for error modes")
    parser.add_argument("--reply", default=None, help="answer text instead of the default summary")
    parser.add_argument("--chunk-delay", type=float, default=0, help="seconds between streamed events")
    parser.add_argument("--window", action="append", default=[], metavar="MODEL=TOKENS",
                        help="answer context_length to MODEL when a prompt counts more TOKENS (repeatable)")
    args = parser.parse_args(argv)
    knobs = {"delay": args.delay, "retry_after": args.retry_after, "status": args.status, "reply": args.reply}
    knobs["chunk_delay"] = args.chunk_delay
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    threading.Thread(target=_await_eof, args=(done,), daemon=True).start()
    with LoopbackProvider(host=args.host, port=args.port) as provider:
        provider.set_default(Fault(args.mode, **knobs))
        provider.windows = {model: int(tokens) for model, _, tokens in (w.partition("=") for w in args.window)}
        provider.script(*(Fault(mode, **knobs) for mode in filter(None, args.script.split(","))))
        print(provider.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            while not done.wait(0.1):
                pass
    return 0


def _await_eof(done: threading.Event) -> None:
    # os.read, not sys.stdin: a daemon thread blocked in a buffered read aborts interpreter shutdown
    with contextlib.suppress(OSError):
        while os.read(0, 65536):
            pass
    done.set()


if __name__ == "__main__":
    raise SystemExit(main())

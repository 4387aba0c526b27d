"""The loopback provider, driven with plain httpx over real sockets: both wire formats, every mode."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from subprocess import PIPE
from typing import Any

import httpx
import pytest
from tests.loopback_provider import (
    DEFAULT_RETRY_AFTER,
    TOOL_ARGS,
    Fault,
    LoopbackProvider,
    count_tokens,
    default_reply,
    quote,
)

REPO = Path(__file__).resolve().parents[2]
HEADINGS = ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked")
HEADINGS += ("## Key Decisions", "## Next Steps", "## Critical Context")
USER_TEXT = "<conversation>\n[User]: Fix the failing test in src/app.ts and keep the public API unchanged, please.\n"
KEY = "sk-loopback-test-key"


@dataclass(frozen=True)
class Api:
    """One wire format: where to send, what to send, how to read the answer."""

    name: str
    path: str
    headers: dict[str, str]

    def body(self, stream: bool = True, **extra: Any) -> dict[str, Any]:
        if self.name == "openai":
            messages = [{"role": "system", "content": "You summarize."}, {"role": "user", "content": USER_TEXT}]
            body: dict[str, Any] = {"model": "gpt-4o-mini", "messages": messages, "max_tokens": 2000}
            if stream:
                body |= {"stream": True, "stream_options": {"include_usage": True}}
        else:
            content = [{"type": "text", "text": USER_TEXT}]
            body = {"model": "claude-sonnet-4-5", "system": "You summarize.", "max_tokens": 4096}
            body |= {"messages": [{"role": "user", "content": content}], "stream": stream}
        return body | extra

    def stream_text(self, events: list[tuple[str, Any]]) -> str:
        if self.name == "openai":
            chunks = [data for _, data in events if isinstance(data, dict)]
            return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
        deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
        return "".join(d["text"] for d in deltas if d["type"] == "text_delta")

    def json_text(self, body: dict[str, Any]) -> str:
        if self.name == "openai":
            return body["choices"][0]["message"]["content"] or ""
        return "".join(block["text"] for block in body["content"] if block["type"] == "text")


OPENAI = Api("openai", "/v1/chat/completions", {"authorization": f"Bearer {KEY}"})
ANTHROPIC = Api("anthropic", "/v1/messages", {"x-api-key": KEY, "anthropic-version": "2023-06-01"})
APIS = pytest.mark.parametrize("api", [OPENAI, ANTHROPIC], ids=["openai", "anthropic"])


@pytest.fixture
def lp() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as provider:
        yield provider


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as c:
        yield c


def parse_sse(lines: Iterator[str]) -> list[tuple[str, Any]]:
    """(event name or '', parsed data, or the raw data string when it is not JSON) per event."""
    events: list[tuple[str, Any]] = []
    name, data = "", []
    for line in lines:
        if line == "":
            if data:
                raw = "\n".join(data)
                try:
                    events.append((name, json.loads(raw)))
                except ValueError:
                    events.append((name, raw))
            name, data = "", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
    return events


def stream(client: httpx.Client, lp: LoopbackProvider, api: Api, body: dict[str, Any]) -> tuple[httpx.Response, list]:
    with client.stream("POST", lp.base_url + api.path, json=body, headers=api.headers) as response:
        if response.status_code != 200:
            response.read()
            return response, []
        return response, parse_sse(response.iter_lines())


def post(client: httpx.Client, lp: LoopbackProvider, api: Api, body: dict[str, Any]) -> httpx.Response:
    return client.post(lp.base_url + api.path, json=body, headers=api.headers)


# --- the normal answer ---------------------------------------------------------------------------------------


def test_openai_stream_is_chunks_then_stop_then_usage_then_done(lp: LoopbackProvider, client: httpx.Client) -> None:
    body = OPENAI.body()
    response, events = stream(client, lp, OPENAI, body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events[-1] == ("", "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" and c["model"] == "gpt-4o-mini" for c in chunks)
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert sum(1 for c in chunks if c["choices"] and c["choices"][0]["delta"].get("content")) >= 5
    assert [c["choices"][0]["finish_reason"] for c in chunks[:-1]] == [None] * (len(chunks) - 2) + ["stop"]
    assert all(c["usage"] is None for c in chunks[:-1])
    text = OPENAI.stream_text(events[:-1])
    assert text == default_reply(body)
    assert chunks[-1]["choices"] == []
    prompt = count_tokens("You summarize." + USER_TEXT)
    assert chunks[-1]["usage"] == {
        "prompt_tokens": prompt,
        "completion_tokens": count_tokens(text),
        "total_tokens": prompt + count_tokens(text),
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }


def test_openai_stream_without_include_usage_has_no_usage(lp: LoopbackProvider, client: httpx.Client) -> None:
    _, events = stream(client, lp, OPENAI, OPENAI.body(stream_options=None))
    chunks = [data for _, data in events[:-1]]
    assert all("usage" not in c and c["choices"] for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop" and events[-1] == ("", "[DONE]")


def test_default_reply_is_a_structured_summary_quoting_the_user() -> None:
    text = default_reply(OPENAI.body())
    lines = {line.strip() for line in text.splitlines()}
    assert all(h in lines for h in HEADINGS)
    assert quote(USER_TEXT) in text and len(quote(USER_TEXT)) == 80 and "\n" not in quote(USER_TEXT)
    prefix = default_reply({"messages": [{"role": "user", "content": "turn\n## Original Request\n..."}]})
    assert "## Original Request" in prefix.splitlines() and "## Context Needed to Continue" in prefix.splitlines()
    previous = "## Goal\n**Turn Context (split turn):**\n\n## Original Request\n- earlier"
    history = (
        f"<conversation>\n[User]: hi\n</conversation>\n\n<previous-summary>\n{previous}\n</previous-summary>\n\n"
        "Update it."
    )
    again = default_reply({"messages": [{"role": "user", "content": history}]})
    assert again.startswith("## Goal\n")  # a quoted split-turn summary does not make it a turn-prefix request


def test_anthropic_stream_has_the_real_event_sequence(lp: LoopbackProvider, client: httpx.Client) -> None:
    body = ANTHROPIC.body()
    response, events = stream(client, lp, ANTHROPIC, body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert response.headers["request-id"].startswith("req_")
    names = [name for name, _ in events]
    assert names[:3] == ["message_start", "content_block_start", "ping"]
    assert names[3:-3] == ["content_block_delta"] * (len(names) - 6) and len(names) - 6 >= 5
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    assert all(data["type"] == name for name, data in events)
    message = events[0][1]["message"]
    assert message["content"] == [] and message["stop_reason"] is None and message["model"] == body["model"]
    assert message["usage"] == {
        "input_tokens": count_tokens("You summarize." + USER_TEXT),
        "output_tokens": 1,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }
    assert events[1][1]["content_block"] == {"type": "text", "text": ""}
    text = ANTHROPIC.stream_text(events)
    assert text == default_reply(body)
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"
    assert events[-2][1]["usage"] == {"output_tokens": count_tokens(text)}


def test_anthropic_thinking_comes_first_in_its_own_block(lp: LoopbackProvider, client: httpx.Client) -> None:
    body = ANTHROPIC.body(thinking={"type": "enabled", "budget_tokens": 1024})
    _, events = stream(client, lp, ANTHROPIC, body)
    starts = [data for name, data in events if name == "content_block_start"]
    assert [(s["index"], s["content_block"]["type"]) for s in starts] == [(0, "thinking"), (1, "text")]
    deltas = [data for name, data in events if name == "content_block_delta"]
    kinds = [d["delta"]["type"] for d in deltas]
    first_text = kinds.index("text_delta")
    assert set(kinds[:first_text]) == {"thinking_delta", "signature_delta"} and kinds[0] == "thinking_delta"
    assert all(d["index"] == 1 for d in deltas[first_text:])
    thinking = "".join(d["delta"].get("thinking", "") for d in deltas[:first_text])
    text = ANTHROPIC.stream_text(events)
    assert thinking and text == default_reply(body)
    assert events[-2][1]["usage"]["output_tokens"] == count_tokens(text) + count_tokens(thinking)


@APIS
def test_non_streaming_answer_is_one_json_document(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    body = api.body(stream=False)
    response = post(client, lp, api, body)
    assert response.status_code == 200 and response.headers["content-type"] == "application/json"
    answer = response.json()
    assert api.json_text(answer) == default_reply(body)
    if api is OPENAI:
        assert answer["object"] == "chat.completion" and answer["choices"][0]["finish_reason"] == "stop"
        assert answer["usage"]["completion_tokens"] == count_tokens(default_reply(body))
    else:
        assert answer["type"] == "message" and answer["stop_reason"] == "end_turn"
        assert answer["usage"]["output_tokens"] == count_tokens(default_reply(body))


@APIS
def test_reply_replaces_the_default_text(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script(Fault("ok", reply="just this"), Fault("ok", reply="and this"))
    _, events = stream(client, lp, api, api.body())
    assert api.stream_text(events) == "just this"
    assert api.json_text(post(client, lp, api, api.body(stream=False)).json()) == "and this"
    assert api.json_text(post(client, lp, api, api.body(stream=False)).json()) == default_reply(api.body())


@APIS
def test_a_callable_reply_answers_from_the_request_body(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.set_default(Fault("ok", reply=lambda body: f"{len(body['messages'])} messages, model {body['model']}"))
    body = api.body()
    _, events = stream(client, lp, api, body)
    assert api.stream_text(events) == f"{len(body['messages'])} messages, model {body['model']}"
    lp.set_default(Fault("length", reply=lambda body: "abcdefgh"))
    assert api.json_text(post(client, lp, api, api.body(stream=False)).json()) == "abcd"


# --- errors ----------------------------------------------------------------------------------------------------


@APIS
@pytest.mark.parametrize("mode", ["429", "500", "503", "context_length"])
@pytest.mark.parametrize("streaming", [True, False])
def test_error_modes_answer_like_the_real_api(
    api: Api, mode: str, streaming: bool, lp: LoopbackProvider, client: httpx.Client
) -> None:
    lp.script(mode)
    response, _ = stream(client, lp, api, api.body(stream=streaming))
    status = {"429": 429, "500": 500, "503": 503, "context_length": 400}[mode]
    assert response.status_code == status and response.headers["content-type"] == "application/json"
    error = response.json()["error"]
    if api is OPENAI:
        assert set(error) == {"message", "type", "param", "code"}
    else:
        assert response.json()["type"] == "error" and set(error) == {"type", "message"}
        kinds = {"429": "rate_limit_error", "500": "api_error", "503": "overloaded_error"}
        assert error["type"] == kinds.get(mode, "invalid_request_error")
    assert ("retry-after" in response.headers) == (mode == "429")
    assert stream(client, lp, api, api.body(stream=streaming))[0].status_code == 200


def test_context_length_messages_are_the_providers_own(lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("context_length", "context_length")
    error = post(client, lp, OPENAI, OPENAI.body()).json()["error"]
    assert error["code"] == "context_length_exceeded" and error["type"] == "invalid_request_error"
    assert error["message"] == (
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens."
    )
    error = post(client, lp, ANTHROPIC, ANTHROPIC.body()).json()["error"]
    assert error == {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"}


@APIS
def test_retry_after_and_status_are_configurable(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("429", Fault("429", retry_after=0.25), Fault("503", retry_after=3, status=529), Fault("500", status=502))
    assert post(client, lp, api, api.body()).headers["retry-after"] == str(int(DEFAULT_RETRY_AFTER))
    assert post(client, lp, api, api.body()).headers["retry-after"] == "0.25"
    overloaded = post(client, lp, api, api.body())
    assert overloaded.status_code == 529 and overloaded.headers["retry-after"] == "3"
    assert post(client, lp, api, api.body()).status_code == 502


# --- broken connections and streams ------------------------------------------------------------------------------


@APIS
@pytest.mark.parametrize("streaming", [True, False])
def test_reset_sends_nothing(api: Api, streaming: bool, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("reset")
    with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
        stream(client, lp, api, api.body(stream=streaming))
    (record,) = lp.requests
    assert record.mode == "reset" and not record.completed and record.disconnected_at is None
    assert stream(client, lp, api, api.body(stream=streaming))[0].status_code == 200


@APIS
def test_reset_mid_stream_after_some_events(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("reset_mid_stream")
    received: list[str] = []
    with (
        pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)),
        client.stream("POST", lp.base_url + api.path, json=api.body(), headers=api.headers) as response,
    ):
        assert response.status_code == 200
        received.extend(response.iter_lines())
    assert any(line.startswith("data:") for line in received)
    assert not lp.requests[0].completed


@APIS
def test_stall_sends_part_then_hangs_until_the_client_leaves(
    api: Api, lp: LoopbackProvider, client: httpx.Client
) -> None:
    lp.script("stall")
    received: list[str] = []
    timeout = httpx.Timeout(10, read=0.3)
    with (
        pytest.raises(httpx.ReadTimeout),
        client.stream("POST", lp.base_url + api.path, json=api.body(), headers=api.headers, timeout=timeout) as r,
    ):
        received.extend(r.iter_lines())
    left = time.monotonic()
    assert sum(line.startswith("data:") for line in received) >= 2
    assert not any("[DONE]" in line or "message_stop" in line for line in received)
    record = lp.wait_for(lambda r: r.disconnected_at is not None)
    assert record.disconnected_at is not None and abs(record.disconnected_at - left) < 5.0
    assert not record.completed and record.mode == "stall"


@APIS
def test_stall_without_streaming_sends_half_a_body(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("stall")
    timeout = httpx.Timeout(10, read=0.3)
    with pytest.raises(httpx.ReadTimeout):
        client.post(lp.base_url + api.path, json=api.body(stream=False), headers=api.headers, timeout=timeout)
    assert lp.wait_for(lambda r: r.disconnected_at is not None).mode == "stall"


@APIS
def test_delay_holds_the_first_byte(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script(Fault("delay", delay=0.3), Fault("500", delay=0.3))
    started = time.monotonic()
    _, events = stream(client, lp, api, api.body())
    assert time.monotonic() - started >= 0.25
    assert api.stream_text(events) == default_reply(api.body())
    started = time.monotonic()
    assert post(client, lp, api, api.body()).status_code == 500
    assert time.monotonic() - started >= 0.25


@APIS
def test_chunk_delay_spaces_the_events(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script(Fault("ok", reply="x" * 200, chunk_delay=0.05))
    started = time.monotonic()
    _, events = stream(client, lp, api, api.body())
    assert time.monotonic() - started >= 0.2 and api.stream_text(events) == "x" * 200


@APIS
def test_malformed_stream_has_one_bad_data_line(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("malformed")
    with client.stream("POST", lp.base_url + api.path, json=api.body(), headers=api.headers) as response:
        lines = list(response.iter_lines())
    assert "this line is not server-sent events" in lines
    data = [line[5:].strip() for line in lines if line.startswith("data:")]
    bad = []
    for raw in data:
        try:
            json.loads(raw)
        except ValueError:
            bad.append(raw)
    assert len(bad) == (2 if api is OPENAI else 1)  # OpenAI's [DONE] is not JSON either
    assert bad[0].startswith("{") and ("[DONE]" in data[-1] or "message_stop" in data[-1])


@APIS
def test_malformed_json_answer(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("malformed")
    response = post(client, lp, api, api.body(stream=False))
    assert response.status_code == 200
    with pytest.raises(ValueError):
        response.json()


@APIS
def test_truncated_stream_lacks_the_final_events(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("truncated")
    response, events = stream(client, lp, api, api.body())
    assert response.status_code == 200 and events
    assert all(isinstance(data, dict) for _, data in events)
    text = api.stream_text(events)
    assert text == default_reply(api.body())  # every text chunk arrived; only the ending is missing
    if api is OPENAI:
        assert all(c["choices"] and c["choices"][0]["finish_reason"] is None for _, c in events)
    else:
        assert {"message_delta", "message_stop"}.isdisjoint(name for name, _ in events)
    assert lp.requests[0].completed


@APIS
def test_truncated_json_answer_ends_early(api: Api, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("truncated")
    with pytest.raises(httpx.RemoteProtocolError):
        post(client, lp, api, api.body(stream=False))


@APIS
@pytest.mark.parametrize("streaming", [True, False])
def test_empty_answer_is_well_formed(api: Api, streaming: bool, lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("empty")
    if not streaming:
        answer = post(client, lp, api, api.body(stream=False)).json()
        assert api.json_text(answer) == ""
        return
    _, events = stream(client, lp, api, api.body())
    assert api.stream_text(events) == ""
    if api is OPENAI:
        assert events[-1] == ("", "[DONE]") and events[-2][1]["usage"]["completion_tokens"] == 0
    else:
        assert [name for name, _ in events] == ["message_start", "ping", "message_delta", "message_stop"]
        assert events[2][1]["usage"] == {"output_tokens": 0}


def test_openai_tool_only(lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("tool_only", "tool_only")
    _, events = stream(client, lp, OPENAI, OPENAI.body())
    chunks = [data for _, data in events[:-1] if data["choices"]]
    assert OPENAI.stream_text(events[:-1]) == "" and chunks[0]["choices"][0]["delta"]["content"] is None
    calls = [call for c in chunks for call in c["choices"][0]["delta"].get("tool_calls", [])]
    assert calls[0]["id"] and calls[0]["function"]["name"] == "read"
    assert "".join(call["function"]["arguments"] for call in calls) == TOOL_ARGS
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    message = post(client, lp, OPENAI, OPENAI.body(stream=False)).json()["choices"][0]["message"]
    assert message["content"] is None and message["tool_calls"][0]["function"]["arguments"] == TOOL_ARGS


def test_anthropic_tool_only(lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("tool_only", "tool_only")
    _, events = stream(client, lp, ANTHROPIC, ANTHROPIC.body())
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [s["type"] for s in starts] == ["tool_use"] and ANTHROPIC.stream_text(events) == ""
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert "".join(d["partial_json"] for d in deltas if d["type"] == "input_json_delta") == TOOL_ARGS
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    answer = post(client, lp, ANTHROPIC, ANTHROPIC.body(stream=False)).json()
    assert [b["type"] for b in answer["content"]] == ["tool_use"] and answer["stop_reason"] == "tool_use"


# --- scripting, recording, validation ----------------------------------------------------------------------------


def test_script_is_a_queue_then_the_default(lp: LoopbackProvider, client: httpx.Client) -> None:
    lp.script("500", "429")
    lp.script("503")
    statuses = [post(client, lp, OPENAI, OPENAI.body()).status_code for _ in range(4)]
    assert statuses == [500, 429, 503, 200]
    lp.set_default("500")
    lp.script("ok")
    statuses = [post(client, lp, ANTHROPIC, ANTHROPIC.body()).status_code for _ in range(3)]
    assert statuses == [200, 500, 500]
    assert [r.mode for r in lp.requests] == ["500", "429", "503", "ok", "ok", "500", "500"]
    with pytest.raises(ValueError, match="unknown mode"):
        lp.script("teapot")


def test_requests_are_recorded(lp: LoopbackProvider, client: httpx.Client) -> None:
    before = time.monotonic()
    body = ANTHROPIC.body()
    stream(client, lp, ANTHROPIC, body)
    client.post(lp.base_url + "/v1/chat/completions?x=1", json=OPENAI.body(), headers={"X-Custom-Header": "Yes"})
    first, second = lp.requests
    assert (first.method, first.path, first.body) == ("POST", "/v1/messages", body)
    assert first.headers["x-api-key"] == KEY and first.headers["anthropic-version"] == "2023-06-01"
    assert all(name == name.lower() for name in first.headers)
    assert second.path == "/v1/chat/completions?x=1" and second.headers["x-custom-header"] == "Yes"
    assert before <= first.received_at <= second.received_at <= time.monotonic()
    assert first.completed and second.completed and first.disconnected_at is None
    second.completed = False
    assert lp.requests[1].completed  # a snapshot, not the live record
    lp.clear()
    assert lp.requests == []


def test_chunked_request_body_is_read(lp: LoopbackProvider, client: httpx.Client) -> None:
    raw = json.dumps(OPENAI.body(stream=False)).encode()
    pieces = (raw[i : i + 100] for i in range(0, len(raw), 100))
    response = client.post(lp.base_url + OPENAI.path, content=pieces, headers={"content-type": "application/json"})
    assert response.status_code == 200 and lp.requests[0].body == OPENAI.body(stream=False)


@pytest.mark.parametrize(
    ("api", "headers", "change", "status", "needle"),
    [
        (ANTHROPIC, {"anthropic-version": "2023-06-01"}, {}, 401, "x-api-key"),
        (ANTHROPIC, {"x-api-key": KEY}, {}, 400, "anthropic-version"),
        (ANTHROPIC, None, {"max_tokens": None}, 400, "max_tokens: Field required"),
        (ANTHROPIC, None, {"thinking": {"type": "enabled", "budget_tokens": 500}}, 400, "1024"),
        (ANTHROPIC, None, {"max_tokens": 2000, "thinking": {"type": "enabled", "budget_tokens": 2000}}, 400, "greater"),
        (OPENAI, None, {"stream": None}, 400, "stream_options"),
        (OPENAI, None, {"model": None}, 400, "model"),
    ],
)
def test_invalid_requests_are_rejected_like_the_real_api(
    api: Api, headers: dict[str, str] | None, change: dict[str, Any], status: int, needle: str, lp: LoopbackProvider
) -> None:
    body = {k: v for k, v in (api.body() | change).items() if v is not None}
    lp.script("500")
    with httpx.Client() as client:
        response = client.post(lp.base_url + api.path, json=body, headers=api.headers if headers is None else headers)
        assert response.status_code == status and needle in response.json()["error"]["message"]
        assert post(client, lp, api, api.body()).status_code == 500  # the scripted fault was not used up
    assert lp.requests[0].mode == "invalid"


def test_bad_json_and_unknown_paths(lp: LoopbackProvider, client: httpx.Client) -> None:
    response = client.post(lp.base_url + OPENAI.path, content=b"{nope", headers={"content-type": "application/json"})
    assert response.status_code == 400 and lp.requests[0].body == "{nope"
    assert client.get(lp.base_url + "/v1/models").status_code == 404
    assert client.post(lp.base_url + "/v2/other", json={}).status_code == 404


# --- disconnects, asyncio use, lifecycle ----------------------------------------------------------------------------


@APIS
async def test_cancelling_a_stream_is_seen_at_once(api: Api) -> None:
    async with LoopbackProvider() as lp, httpx.AsyncClient(timeout=10) as client:
        lp.script("stall")
        first_event = asyncio.Event()

        async def consume() -> None:
            async with client.stream("POST", lp.base_url + api.path, json=api.body(), headers=api.headers) as r:
                async for _ in r.aiter_lines():
                    first_event.set()

        task = asyncio.create_task(consume())
        await asyncio.wait_for(first_event.wait(), 5)
        cancelled_at = time.monotonic()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        record = await lp.await_for(lambda r: r.disconnected_at is not None, timeout=5)
        assert record.disconnected_at is not None
        assert 0 <= record.disconnected_at - cancelled_at < 5.0 and not record.completed  # the stall never ends


async def test_a_client_leaving_during_the_delay_is_seen() -> None:
    async with LoopbackProvider() as lp, httpx.AsyncClient() as client:
        lp.script(Fault("delay", delay=30))
        with pytest.raises(httpx.ReadTimeout):
            await client.post(lp.base_url + OPENAI.path, json=OPENAI.body(), timeout=httpx.Timeout(10, read=0.2))
        record = await lp.await_for(lambda r: r.disconnected_at is not None, timeout=5)
        assert record.disconnected_at is not None and record.disconnected_at - record.received_at < 5


def test_a_finished_request_is_not_a_disconnect(lp: LoopbackProvider) -> None:
    with httpx.Client() as client:
        post(client, lp, OPENAI, OPENAI.body())
    time.sleep(0.05)
    (record,) = lp.requests
    assert record.completed and record.disconnected_at is None


def test_stop_ends_hanging_streams_and_frees_the_port(client: httpx.Client) -> None:
    lp = LoopbackProvider().start()
    lp.script("stall")
    with (
        pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)),
        client.stream("POST", lp.base_url + OPENAI.path, json=OPENAI.body()) as r,
    ):
        lines = r.iter_lines()
        next(lines)
        started = time.monotonic()
        lp.stop()
        list(lines)
    assert time.monotonic() - started < 20  # the stall itself never ends
    with pytest.raises(httpx.ConnectError):
        client.post(lp.base_url + OPENAI.path, json=OPENAI.body())


def test_a_busy_port_is_reported(lp: LoopbackProvider) -> None:
    with pytest.raises(OSError):
        LoopbackProvider(port=int(lp.base_url.rsplit(":", 1)[1])).start()


# --- the command line ----------------------------------------------------------------------------------------------


@contextmanager
def cli(*args: str) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """The CLI as a subprocess and the first line it printed; killed and its pipes closed afterwards."""
    env = os.environ | {"PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "tests.loopback_provider", "--port", "0", *args]
    with subprocess.Popen(command, cwd=REPO, env=env, text=True, stdin=PIPE, stdout=PIPE) as process:
        assert process.stdout is not None
        try:
            yield process, process.stdout.readline().strip()
        finally:
            process.kill()


def test_cli_prints_its_url_first_and_stops_on_stdin_eof() -> None:
    with cli("--mode", "429", "--retry-after", "2", "--script", "ok") as (process, url):
        assert url.startswith("http://127.0.0.1:") and int(url.rsplit(":", 1)[1]) > 0
        with httpx.Client(timeout=10) as client:
            assert client.post(url + OPENAI.path, json=OPENAI.body()).status_code == 200
            limited = client.post(url + ANTHROPIC.path, json=ANTHROPIC.body(), headers=ANTHROPIC.headers)
        assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
        assert process.stdin is not None
        process.stdin.close()
        assert process.wait(timeout=10) == 0


def test_cli_stops_on_sigterm() -> None:
    with cli("--mode", "stall") as (process, url):
        assert url.startswith("http://127.0.0.1:")
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0

"""Cache-aware compaction against the real daemon and the loopback provider's prompt caches.

The agent is played by the test: it sends its request (the session's context as Chat
Completions messages, a system prompt and tools) to the loopback, which caches it as
OpenAI does, and hands the same body to the daemon with ``pi/recordRequest``.

Checked: with ``summarizer.cacheReuse: "auto"`` the compaction replays that body byte for
byte plus one user message, reads >= 90% of its prompt from the cache and bills at most
half the serialized request's input; with ``"off"`` the request is today's serialized one;
a request older than the cache lifetime is never replayed; a replayed answer that calls a
tool or lacks the headings is asked again serialized (both usages count); the body never
reaches the daemon's log.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.e2e import daemon_client
from tests.e2e.daemon_client import (
    LOOPBACK_KEY,
    Daemons,
    call,
    cli_json,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    generated,
    loopback_settings,
)
from tests.loopback_provider import Fault, LoopbackProvider, RecordedRequest

from pi_sessiond.compaction.prompts import SUMMARIZATION_SYSTEM_PROMPT

pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")
MODEL = "agentm"
PRICE = {"input": 1.25, "output": 10.0, "cacheRead": 0.125, "cacheWrite": 0.0}
SECRET_MARK = "body-marker-3f9a1c"
TOOLS = [{"type": "function", "function": {"name": "read", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {}}}}]


def settings(base_url: str, reuse: str = "auto", provider: str = "openai") -> dict[str, Any]:
    summarizer = loopback_settings(base_url, model=MODEL, cacheReuse=reuse, prices={f"{provider}/{MODEL}": PRICE})
    if provider == "anthropic":
        summarizer["summarizer"].update(provider="anthropic", baseUrl=base_url)
    return {**summarizer, "compaction": {"keepRecentTokens": 2000}}


def as_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "\n".join(str(p.get("text") or p.get("arguments") or "") for p in parts if isinstance(p, dict))


def agent_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's Chat Completions request for the session's context."""
    chat = [{"role": "system", "content": f"You are a coding agent ({SECRET_MARK}). " + "Follow the rules. " * 100}]
    for message in messages:
        role = "assistant" if message.get("role") == "assistant" else "user"
        chat.append({"role": role, "content": as_text(message) or "(empty)"})
    return {"model": MODEL, "messages": chat, "stream": True, "stream_options": {"include_usage": True},
            "tools": TOOLS, "max_completion_tokens": 8000}


def anthropic_body(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The agent's Messages request, with Pi's breakpoints (the system prompt and the last user message)."""
    chat = agent_body(messages)["messages"]
    control = {"type": "ephemeral"}
    turns = [{"role": m["role"], "content": [{"type": "text", "text": m["content"]}]} for m in chat[1:]]
    last_user = max(i for i, m in enumerate(turns) if m["role"] == "user")
    turns[last_user]["content"][-1]["cache_control"] = control
    system = [{"type": "text", "text": chat[0]["content"], "cache_control": control}]
    return {"model": MODEL, "max_tokens": 8000, "stream": True, "system": system, "messages": turns,
            "tools": [{"name": "read", "description": "Read a file", "input_schema": {"type": "object"}}]}


async def record_agent_request(
    client: Any, loopback: LoopbackProvider, sid: str, *, age: float = 0, provider: str = "openai"
) -> dict[str, Any]:
    """Send the agent's request to the loopback (warming its cache), then hand it to the daemon."""
    context = await call(client, "pi/getContext", {"sessionId": sid})
    if provider == "openai":
        body, url = agent_body(context["messages"]), "/v1/chat/completions"
        headers = {"authorization": f"Bearer {LOOPBACK_KEY}"}
    else:
        body, url = anthropic_body(context["messages"]), "/v1/messages"
        headers = {"x-api-key": LOOPBACK_KEY, "anthropic-version": "2023-06-01"}
    async with httpx.AsyncClient(base_url=loopback.base_url) as http:
        sent = await http.post(url, json=body, headers=headers)
        await sent.aread()
    params = {"sessionId": sid, "provider": provider, "model": MODEL, "body": body,
              "sentAt": (time.time() - age) * 1000}
    assert await call(client, "pi/recordRequest", params) == {}
    return body


def billed(request: RecordedRequest) -> float:
    """The request's input in dollars at PRICE (uncached input and cache reads)."""
    usage = request.usage or {}
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return ((usage["prompt_tokens"] - cached) * PRICE["input"] + cached * PRICE["cacheRead"]) / 1e6


def cached_share(request: RecordedRequest) -> float:
    usage = request.usage or {}
    return float(usage["prompt_tokens_details"]["cached_tokens"]) / usage["prompt_tokens"]


async def compact_copy(client: Any, loopback: LoopbackProvider, source: Path, name: str, *,
                       reuse: str, age: float = 0) -> tuple[dict[str, Any], list[RecordedRequest], dict[str, Any]]:
    """Open a copy of ``source``, play the agent's request, compact it with ``cacheReuse: reuse``."""
    path = source.parent / name
    path.write_bytes(source.read_bytes())
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    await call(client, "pi/updateSettings", {"sessionId": sid, "settings": {"summarizer": {"cacheReuse": reuse}}})
    body = await record_agent_request(client, loopback, sid, age=age)
    loopback.clear()
    result = await call(client, "pi/compact", {"sessionId": sid, "workDoneToken": f"tok-{name}"})
    return result, loopback.requests, body


async def test_auto_replays_the_cached_request_and_off_sends_todays(daemons: Daemons, tmp_path: Path) -> None:
    source = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        client = await daemons.start(settings(loopback.base_url))
        replayed, sent, body = await compact_copy(client, loopback, source, "auto.jsonl", reuse="auto")
        today, serial, _ = await compact_copy(client, loopback, source, "off.jsonl", reuse="off")
        bar = [r.message for r in client.progress_reports["tok-auto.jsonl"][1:-1]]
    assert replayed["requestShape"] == "replay" and replayed["requestPlan"]["shape"] == "replay"
    replay = sent[0]  # the history request (a split turn's prefix request follows, serialized)
    assert replay.body["messages"][:-1] == body["messages"] and replay.body["tools"] == body["tools"]
    same = ("messages", "max_completion_tokens")  # the output limit is no part of the cached prefix
    assert {k: v for k, v in replay.body.items() if k not in same} == {k: v for k, v in body.items() if k not in same}
    assert replay.body["max_completion_tokens"] >= body["max_completion_tokens"]
    last = replay.body["messages"][-1]
    assert last["role"] == "user" and "## Goal" in last["content"] and "Do not call any tool" in last["content"]
    assert cached_share(replay) >= 0.9
    assert replayed["entry"]["usage"]["cacheRead"] == sum(
        (r.usage or {})["prompt_tokens_details"]["cached_tokens"] for r in sent)
    assert replayed["entry"]["summary"].startswith("## Goal")
    assert any(m and m.startswith("replaying the agent's cached request") for m in bar)
    # off: today's request, the old messages serialized under the summarization system prompt
    assert today["requestShape"] == "serialized" and "requestPlan" not in today
    history = serial[0]
    assert [m["role"] for m in history.body["messages"]] == ["system", "user"]
    assert history.body["messages"][0]["content"] == SUMMARIZATION_SYSTEM_PROMPT
    assert billed(replay) <= 0.5 * billed(history)


async def test_an_expired_cache_is_never_replayed(daemons: Daemons, tmp_path: Path) -> None:
    source = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        client = await daemons.start(settings(loopback.base_url))
        cold, sent, _ = await compact_copy(client, loopback, source, "cold.jsonl", reuse="auto", age=600)
        loopback.cache.clear()  # both summaries start from the same (cold) cache
        today, serial, _ = await compact_copy(client, loopback, source, "off.jsonl", reuse="off")
    assert cold["requestShape"] == "serialized" and cold["requestPlan"]["reason"] == "the provider's cache has expired"
    assert sent[0].body == serial[0].body  # today's request exactly
    assert cold["usage"]["cost"]["total"] == pytest.approx(today["usage"]["cost"]["total"])


@pytest.mark.parametrize("fault", [Fault("tool_only"), Fault("ok", reply="I will keep working on the parser.")])
async def test_an_unusable_replayed_answer_is_asked_again_serialized(
    daemons: Daemons, tmp_path: Path, fault: Fault
) -> None:
    source = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        client = await daemons.start(settings(loopback.base_url))
        path = tmp_path / "f.jsonl"
        path.write_bytes(source.read_bytes())
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        await record_agent_request(client, loopback, sid)
        loopback.clear()
        loopback.script(fault)
        result = await call(client, "pi/compact", {"sessionId": sid})
        sent = loopback.requests
    assert sent[0].body["tools"] == TOOLS and sent[1].body["messages"][0]["content"] == SUMMARIZATION_SYSTEM_PROMPT
    assert result["requestShape"] == "serialized"
    assert result["requestPlan"]["reason"] == "the replayed answer was unusable"
    assert result["entry"]["summary"].startswith("## Goal")
    spent = sum((r.usage or {})["completion_tokens"] for r in sent)
    assert result["usage"]["output"] == spent  # the unusable answer is paid for too


async def test_the_recorded_body_never_reaches_the_log(
    daemons: Daemons, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    log = tmp_path / "daemon.log"
    command = [*daemon_client.serve_command(), "--log-file", str(log), "--log-level", "debug"]
    monkeypatch.setattr(daemon_client, "serve_command", lambda: command)
    async with LoopbackProvider() as loopback:
        client = await daemons.start(settings(loopback.base_url))
        await compact_copy(client, loopback, source, "a.jsonl", reuse="auto")
        bad = {"sessionId": "nope", "provider": "openai", "model": MODEL, "body": {"secret": SECRET_MARK}}
        with pytest.raises(Exception) as refused:
            await call(client, "pi/recordRequest", bad)
        malformed = {**bad, "body": f"not an object {SECRET_MARK}"}
        with pytest.raises(Exception) as invalid:
            await call(client, "pi/recordRequest", malformed)
    assert SECRET_MARK not in str(refused.value) and SECRET_MARK not in str(invalid.value)
    assert "body" in str(invalid.value)  # the field is named, its value is not
    assert "pi/recordRequest" in log.read_text() or log.stat().st_size > 0  # the log was written
    for found in tmp_path.rglob("*"):
        if found.is_file() and found.suffix != ".jsonl":
            assert SECRET_MARK not in found.read_text(errors="replace"), found
    assert all(SECRET_MARK not in json.dumps(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())


async def test_anthropic_replays_behind_its_breakpoints_and_a_closed_session_forgets(
    daemons: Daemons, tmp_path: Path
) -> None:
    source = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    path = tmp_path / "a.jsonl"
    path.write_bytes(source.read_bytes())
    async with LoopbackProvider() as loopback:
        client = await daemons.start(settings(loopback.base_url, provider="anthropic"))
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        body = await record_agent_request(client, loopback, sid, provider="anthropic")
        loopback.clear()
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
        sent = loopback.requests
        await call(client, "pi/closeSession", {"sessionId": sid})
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        loopback.clear()
        again = await call(client, "pi/compact", {"sessionId": sid})
    replay = sent[0]
    assert replay.path == "/v1/messages" and replay.body["messages"][:-1] == body["messages"]
    assert replay.body["system"] == body["system"] and replay.body["tools"] == body["tools"]
    last = replay.body["messages"][-1]
    assert last["role"] == "user" and "Do not call any tool" in last["content"][0]["text"]
    usage = replay.usage or {}
    read = usage["cache_read_input_tokens"]
    assert usage["cache_creation_input_tokens"] == 0 and read / (read + usage["input_tokens"]) >= 0.9
    assert draft["usage"]["cacheRead"] >= read and draft["summary"].startswith("## Goal")
    assert again["requestShape"] == "serialized" and again["requestPlan"]["reason"] == "no recorded request"


def test_the_dry_run_shows_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps(settings("http://127.0.0.1:9")))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    shown = cli_json("compact", str(path), "--dry-run", "--json")
    plan = shown["requestPlan"]
    assert shown["requestShape"] == "serialized" and plan["reason"] == "no recorded request"
    history = next(r for r in shown["requests"] if r["purpose"] == "history")
    assert plan["serializedTokens"] == (len(history["systemPrompt"]) + len(history["prompt"]) + 3) // 4
    assert plan["priced"] is True and plan["serializedCost"] == pytest.approx(plan["serializedTokens"] * 1.25 / 1e6)
    (agent / "settings.json").write_text(json.dumps(settings("http://127.0.0.1:9", reuse="off")))
    off = cli_json("compact", str(path), "--dry-run", "--json")
    assert off["requestShape"] == "serialized" and "requestPlan" not in off

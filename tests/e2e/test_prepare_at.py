"""``compaction.prepareAt`` against the real daemon and the loopback provider.

The loopback provider records every request, so reuse is proven by counting
them: a draft prepared in the background is what the threshold compaction,
``pi/compact`` and ``pi/summarize`` write or answer, without another one.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import (
    Daemons,
    assistant_msg,
    call,
    cancel_progress,
    cli_json,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    generated,
    loopback_settings,
    read_lines,
    settle,
    user_msg,
    wait_event,
)
from tests.e2e.test_summarize import hold, release
from tests.loopback_provider import Fault, LoopbackProvider, first_user_text

# threshold 16000; prepareAt 0.5: a draft is made in the background above 8000 tokens
WINDOW = {"contextWindow": 20000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000, "prepareAt": 0.5}}
TITLE = "Preparing a compaction draft (background)"
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


def bars(client: Any, title: str = TITLE) -> list[Any]:
    """The progress tokens whose bar began with ``title``."""
    return [t for t, values in client.progress_reports.items() if values and getattr(values[0], "title", None) == title]


def ended(client: Any, token: Any) -> str | None:
    last = client.progress_reports[token][-1]
    return last.message if type(last).__name__ == "WorkDoneProgressEnd" else None


async def prepared(client: Any, loopback: LoopbackProvider) -> int:
    """Wait for the background draft's bar to end ``done``; the number of model requests made so far."""
    (token,) = await settle(lambda: bars(client), what="the background draft's progress bar")
    assert await settle(lambda: ended(client, token), what="the background draft") == "done"
    return len(loopback.requests)


async def start(daemons: Daemons, loopback: LoopbackProvider, path: Path) -> tuple[Any, str]:
    client = await daemons.start({**loopback_settings(loopback.base_url), **WINDOW})
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    return client, sid


def turns(count: int) -> list[dict[str, Any]]:
    """Sizeable turns whose assistant usage stays below ``prepareAt`` (nothing starts on them)."""
    out: list[dict[str, Any]] = []
    for i in range(count):
        out += [user_msg(f"turn {i}: " + "lorem ipsum dolor " * 330), assistant_msg(f"ok {i}", input_tokens=1000)]
    return out


async def test_the_threshold_commits_the_prepared_draft_at_once(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok"))
        client, sid = await start(daemons, loopback, path)
        below = await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("next task"), assistant_msg("small", input_tokens=7000)]})
        assert below["shouldCompact"] is False and bars(client) == []  # below prepareAt: nothing
        await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("and the next"), assistant_msg("past prepareAt", input_tokens=9000)]})
        asked = await prepared(client, loopback)
        assert asked >= 1 and events(client, "pi/compacted") == []  # a draft: nothing written
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})  # the same range: reused
        assert len(loopback.requests) == asked

        crossing = await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("after the draft"), assistant_msg("over the threshold", input_tokens=17000)]})
        assert crossing["shouldCompact"] is True
        compacted = await wait_event(client, "pi/compacted")
        assert len(loopback.requests) == asked  # committed, not summarized again
    entry = compacted["entry"]
    assert compacted["reason"] == "threshold" and entry["summary"] == draft["summary"]
    assert entry["firstKeptEntryId"] == draft["firstKeptEntryId"] and entry["parentId"] == crossing["leafId"]
    assert read_lines(path)[-1] == entry
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert any("after the draft" in str(m.get("content")) for m in context["messages"])  # in the kept part
    end = await wait_event(client, "pi/compactionEnded")
    assert end["entry"] == entry and end["result"]["outcome"] == "compacted"


async def test_a_draft_that_is_no_longer_enough_is_updated_from_where_it_was(daemons: Daemons,
                                                                            tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    start_text = first_text(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok"))
        client, sid = await start(daemons, loopback, path)
        await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("next task"), assistant_msg("past prepareAt", input_tokens=9000)]})
        asked = await prepared(client, loopback)
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
        assert start_text[:60] in first_user_text(loopback.requests[0].body)  # the draft summarized the start

        await call(client, "pi/append", {"sessionId": sid, "entries": [
            *turns(6), assistant_msg("far over the threshold", input_tokens=30000)]})
        compacted = await wait_event(client, "pi/compacted")
        update = loopback.requests[asked:]
    assert 1 <= len(update) <= 2  # only the new range (a split turn asks for its prefix too)
    prompt = first_user_text(update[0].body)
    conversation = prompt.split("<conversation>")[1].split("</conversation>")[0]
    previous = prompt.split("<previous-summary>")[1].split("</previous-summary>")[0]
    assert previous.strip() == draft["summary"].strip()  # the draft is the previous summary
    assert start_text[:60] not in conversation and "turn 0: lorem" in conversation  # only the new range
    entry = compacted["entry"]
    assert entry["firstKeptEntryId"] != draft["firstKeptEntryId"] and read_lines(path)[-1] == entry
    assert sum(e["type"] == "compaction" for e in read_lines(path)) == 1  # one entry covers both ranges
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert context["messages"][0]["role"] == "compactionSummary"


async def test_the_background_draft_is_cancellable_and_yields_to_a_request(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        loopback.script(Fault("stall"), Fault("stall"))
        loopback.set_default(Fault("ok"))
        client, sid = await start(daemons, loopback, path)
        await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("next task"), assistant_msg("past prepareAt", input_tokens=9000)]})
        (token,) = await settle(lambda: bars(client), what="the background draft's bar")
        await settle(lambda: loopback.requests, what="the background draft's request")
        cancel_progress(client, token)  # its own cancel button
        assert await settle(lambda: ended(client, token), what="the cancelled draft") == "cancelled"
        await settle(lambda: loopback.requests[0].disconnected_at, what="the provider to see the cancel")

        await call(client, "pi/append", {"sessionId": sid, "entries": [
            user_msg("again"), assistant_msg("past prepareAt", input_tokens=9500)]})
        second = await settle(lambda: [t for t in bars(client) if t != token], what="a second background draft")
        await settle(lambda: len(loopback.requests) >= 2, what="its request")
        result = await call(client, "pi/compact", {"sessionId": sid, "customInstructions": "the tests"})
        assert result["outcome"] == "compacted"  # not busy: the background draft gave its slot
        assert ended(client, second[0]) == "cancelled" and loopback.requests[1].disconnected_at is not None
        assert "the tests" in json.dumps(loopback.requests[-1].body)


async def test_a_live_pis_appends_prepare_the_draft_its_summarize_reuses(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok"))
        client, sid = await start(daemons, loopback, path)
        child = hold(path, "--pid", str(os.getpid()), "--socket", str(tmp_path / "pi-x.sock"))  # stands in for Pi
        try:
            await wait_event(client, "pi/sessionLive")
            pi_appends(path, [user_msg("pi's turn"), assistant_msg("pi's answer", input_tokens=9000)])  # prepareAt
            asked = await prepared(client, loopback)
            draft = await call(client, "pi/summarize", {"sessionId": sid, "reason": "threshold"})
            assert len(loopback.requests) == asked and draft["summary"]  # Pi's summary is the prepared draft

            pi_appends(path, [*turns(2), user_msg("over"), assistant_msg("Pi's threshold", input_tokens=17000)])
            preparation = cli_json("compact", str(path), "--dry-run", "--json", "--keep-recent-tokens", "1000")
            again = await call(client, "pi/summarize", {"sessionId": sid, "reason": "threshold"})
            assert len(loopback.requests) == asked and again["draftId"] == draft["draftId"]  # still enough
            assert again["firstKeptEntryId"] == draft["firstKeptEntryId"] != preparation["firstKeptEntryId"]
            pis = await call(client, "pi/summarize", {"sessionId": sid, "reason": "threshold",
                                                      "preparation": preparation})
            assert pis["firstKeptEntryId"] == preparation["firstKeptEntryId"]  # exactly Pi's range
            prompt = first_user_text(loopback.requests[asked].body)  # only what the draft does not cover
            assert prompt.split("<previous-summary>")[1].split("</previous-summary>")[0].strip() == draft["summary"]
            conversation = prompt.split("<conversation>")[1].split("</conversation>")[0]
            assert "pi's turn" in conversation and first_text(path)[:60] not in conversation
        finally:
            release(child)


def first_text(path: Path) -> str:
    """The text of the session's first user message."""
    content = next(e["message"]["content"] for e in read_lines(path)
                   if e["type"] == "message" and e["message"]["role"] == "user")
    return content if isinstance(content, str) else str(content[0]["text"])


def pi_appends(path: Path, rows: list[dict[str, Any]]) -> None:
    """Lines as Pi appends them (each the child of the file's last entry)."""
    parent = read_lines(path)[-1]["id"]
    with open(path, "a") as fh:
        for row in rows:
            line = {**row, "id": os.urandom(4).hex(), "parentId": parent, "timestamp": "2026-01-01T00:00:00.000Z"}
            fh.write(json.dumps(line) + "\n")
            parent = line["id"]

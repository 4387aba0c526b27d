"""Summarizing requests against the real daemon subprocess: progress, cancellation, hooks, auto-compaction.

The summarizer is the offline one unless a test routes it to the in-process
loopback provider (``tests/loopback_provider.py``), which streams, stalls,
fails and records every request (``disconnected_at`` when the daemon hung up).
Helpers and hang-trap notes: ``tests/e2e/daemon_client.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    LOOPBACK_KEY,
    TIMEOUT,
    Daemons,
    assistant_msg,
    call,
    cancel,
    cancel_progress,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    generated,
    loopback_settings,
    progress_kinds,
    read_lines,
    send,
    settle,
    user_msg,
    wait_event,
)
from tests.loopback_provider import Fault, LoopbackProvider

from pi_sessiond.service.compacting.request import OVERFLOW_RETRIED

SMALL_KEEP = {"compaction": {"keepRecentTokens": 2000}}
TINY_RETRY = {"retry": {"baseDelayMs": 1}}  # Pi's 2000 ms base would make failure tests slow
# ``$/progress`` on a client-chosen ``workDoneToken`` is legal LSP, but pytest-lsp warns
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def rpc_error(awaitable: Any, timeout: float = TIMEOUT) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(awaitable, timeout)
    return info.value


async def open_path(client: Any, path: Path) -> str:
    return (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]  # type: ignore[no-any-return]


def session_file(tmp_path: Path, name: str = "s.jsonl", entries: int = 150, seed: int = 7) -> Path:
    return generated(tmp_path / name, entries=entries, seed=seed)


def reports(client: Any, token: Any) -> list[Any]:
    return list(client.progress_reports.get(token, []))


# ------------------------------------------------------------------ pi/compact and progress


async def test_compact_streams_progress_on_the_client_token_and_notifies(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = path.read_bytes()
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok", chunk_delay=0.01))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        result = await call(
            client,
            "pi/compact",
            {"sessionId": sid, "workDoneToken": "tok-1", "customInstructions": "focus on the tests"},
        )
        requests = loopback.requests  # two when the cut splits a turn (history + turn prefix)
    assert 1 <= len(requests) <= 2 and all(r.completed for r in requests)
    request = requests[0]
    assert list(result) == ["entry", "tokensBefore", "tokensAfter", "estimatedTokensAfter", "usage", "outcome",
                            "masked", "gate", "requestShape", "requestPlan"]
    entry = result["entry"]
    assert entry["type"] == "compaction" and entry["summary"].startswith("## Goal")
    assert 0 < result["tokensAfter"] < result["tokensBefore"] == entry["tokensBefore"]
    assert result["estimatedTokensAfter"] == result["tokensAfter"] and result["outcome"] == "compacted"
    usage = result["usage"]
    assert usage == entry["usage"] and usage["input"] > 0 and usage["output"] > 0
    assert {"cacheRead", "cacheWrite", "totalTokens", "cost"} <= set(usage)
    assert path.read_bytes().startswith(before) and read_lines(path)[-1] == entry
    # after the compaction Pi's contextTokens is unknown; the estimate is estimatedTokensAfter
    stats = await call(client, "pi/getStats", {"sessionId": sid})
    assert stats["contextTokens"] is None and stats["estimatedContextTokens"] == result["estimatedTokensAfter"]
    assert (await call(client, "pi/estimateTokens", {"sessionId": sid}))["tokens"] == result["estimatedTokensAfter"]
    assert request.path == "/v1/chat/completions" and request.body["stream"] is True
    assert request.headers["authorization"] == f"Bearer {LOOPBACK_KEY}"
    assert "focus on the tests" in json.dumps(request.body)

    kinds = progress_kinds(client, "tok-1")
    assert kinds[0] == "Begin" and kinds[-1] == "End" and kinds.count("Begin") == kinds.count("End") == 1
    bar = reports(client, "tok-1")
    assert bar[0].cancellable is True and bar[-1].message == "done"
    messages = [r.message for r in bar[1:-1]]
    assert messages[0] == "preparing" and messages[-2:] == ["writing", "done"]
    assert any(m.startswith("summarizing ") and m.endswith(" messages") for m in messages)
    assert any(m.endswith(" tokens streamed") for m in messages)
    percentages = [r.percentage for r in bar[1:-1] if r.percentage is not None]
    assert percentages == sorted(percentages) and percentages[-1] == 100
    assert list(client.progress_reports) == ["tok-1"]  # no server token beside the client's

    compacted = await wait_event(client, "pi/compacted")
    assert compacted == {"sessionId": sid, "entry": entry, "reason": "manual"}
    changed = await wait_event(client, "pi/sessionChanged", lambda p: p["reason"] == "compaction")
    assert changed == {"sessionId": sid, "leafId": entry["id"], "reason": "compaction"}
    assert events(client, "pi/compactionStarted") == []  # manual: no auto-compaction events


async def test_compact_creates_a_token_when_the_client_declared_progress(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP)  # offline summarizer
    sid = await open_path(client, path)
    result = await call(client, "pi/compact", {"sessionId": sid})
    (token,) = client.progress_reports
    assert isinstance(token, str)
    kinds = progress_kinds(client, token)
    assert kinds[0] == "Begin" and kinds[-1] == "End" and "Report" in kinds
    assert reports(client, token)[0].title and reports(client, token)[0].cancellable is True
    assert read_lines(path)[-1] == result["entry"]


async def test_no_progress_for_a_client_without_work_done_progress(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP, progress=False)
    sid = await open_path(client, path)
    await call(client, "pi/compact", {"sessionId": sid})
    assert client.progress_reports == {}


# ------------------------------------------------------------------ cancellation and failures


async def test_cancel_request_mid_stream(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/compact", {"sessionId": sid, "workDoneToken": "c-1"}, msg_id="compact-1")
        await settle(
            lambda: any((r.message or "").endswith("tokens streamed") for r in reports(client, "c-1")),
            what="streamed tokens",
        )
        cancelled_at = time.monotonic()
        cancel(client, "compact-1")
        error = await rpc_error(pending)
        assert error.code == -32800
        await settle(
            lambda: all(r.disconnected_at is not None for r in loopback.requests),
            what="the loopback to see the disconnect of every request",
        )
        assert not any(r.completed for r in loopback.requests)
        assert all(r.disconnected_at - cancelled_at < 1.0 for r in loopback.requests)  # type: ignore[operator]
    assert sha(path) == before
    assert progress_kinds(client, "c-1")[-1] == "End" and reports(client, "c-1")[-1].message == "cancelled"
    assert events(client, "pi/compacted") == []
    failed = await wait_event(client, "pi/compactionFailed")
    assert failed == {"sessionId": sid, "reason": "manual", "errorMessage": None, "aborted": True,
                      "willRetry": False, "errorReason": "cancelled"}
    # the session still works, and a new compaction may start
    assert (await call(client, "pi/getStats", {"sessionId": sid}))["compactions"] == 0


async def test_work_done_progress_cancel_mid_stream(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/compact", {"sessionId": sid}, msg_id="compact-2")
        token = await settle(
            lambda: next(
                (
                    t
                    for t, bar in client.progress_reports.items()
                    if any((getattr(r, "message", None) or "").endswith("streamed") for r in bar)
                ),
                None,
            ),
            what="a streaming bar",
        )
        cancel_progress(client, token)
        error = await rpc_error(pending)
        assert error.code == -32800
        await settle(
            lambda: all(r.disconnected_at is not None for r in loopback.requests),
            what="the loopback to see the disconnect",
        )
    assert sha(path) == before
    assert progress_kinds(client, token)[-1] == "End"


async def test_summarizer_failure_is_32005_with_status_and_no_key(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("500"))  # fails forever
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP, **TINY_RETRY})
        sid = await open_path(client, path)
        error = await rpc_error(call(client, "pi/compact", {"sessionId": sid, "workDoneToken": "f"}))
        attempts = len(loopback.requests)
    assert error.code == -32005 and error.data["reason"] == "summarizerFailed"
    assert error.data["status"] == 500 and "gave up after 4 attempts" in error.message
    assert attempts == 4  # one try and retry.maxRetries (3) retries of the first request; no other layer retries
    assert LOOPBACK_KEY not in str(error) and LOOPBACK_KEY not in json.dumps(error.data)
    assert sha(path) == before
    assert progress_kinds(client, "f")[-1] == "End" and reports(client, "f")[-1].message == "failed"
    retries = [r.message for r in reports(client, "f") if r.message and r.message.startswith("retrying in ")]
    assert [m.split(": ", 1)[0] for m in retries] == [
        "retrying in 0.001s (attempt 2 of 4)",
        "retrying in 0.002s (attempt 3 of 4)",
        "retrying in 0.004s (attempt 4 of 4)",
    ]
    failed = await wait_event(client, "pi/compactionFailed")
    assert failed["sessionId"] == sid and failed["reason"] == "manual" and failed["aborted"] is False
    assert failed["errorReason"] == "summarizerFailed" and failed["willRetry"] is False
    assert failed["errorMessage"] == f"Compaction failed: {error.message}"
    assert LOOPBACK_KEY not in json.dumps(failed)
    assert len(events(client, "pi/compactionFailed")) == 1


async def test_a_transient_error_is_retried_and_shown_in_progress(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    async with LoopbackProvider() as loopback:
        loopback.script(Fault("429", retry_after=30))  # Retry-After capped by retry.maxAgentDelayMs
        retry = {"retry": {"baseDelayMs": 1, "maxAgentDelayMs": 20}}
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP, **retry})
        sid = await open_path(client, path)
        result = await call(client, "pi/compact", {"sessionId": sid, "workDoneToken": "r"})
        modes = [r.mode for r in loopback.requests]
    assert modes[:2] == ["429", "ok"] and read_lines(path)[-1] == result["entry"]
    retries = [r for r in reports(client, "r") if r.message and r.message.startswith("retrying in ")]
    assert len(retries) == 1 and retries[0].message.startswith("retrying in 0.02s (attempt 2 of 4): ")
    assert "429" in retries[0].message and LOOPBACK_KEY not in retries[0].message


@pytest.mark.parametrize("mode", ["length", "tool_only"])
async def test_an_incomplete_summary_is_32013_and_writes_nothing(daemons: Daemons, tmp_path: Path, mode: str) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault(mode))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP, **TINY_RETRY})
        sid = await open_path(client, path)
        error = await rpc_error(call(client, "pi/compact", {"sessionId": sid}))
        attempts = len(loopback.requests)
    assert error.code == -32013 and error.data["reason"] == "summaryIncomplete"
    assert error.data["stopReason"] == ("length" if mode == "length" else "toolUse")
    assert attempts == 1  # never asked again, never written
    assert sha(path) == before


async def test_conflict_when_the_leaf_moves_to_another_branch_during_a_compaction(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = session_file(tmp_path)
    lines = read_lines(path)
    # an assistant entry well before the leaf: navigating there moves the leaf onto it
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("delay", delay=1.0))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/compact", {"sessionId": sid}, msg_id="compact-3")
        await settle(lambda: loopback.requests, what="the summarizer request")
        moved = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"]})
        assert moved["leafId"] == target["id"]
        appended = await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("another branch")]})
        error = await rpc_error(pending)
    assert error.code == -32006 and error.data["reason"] == "conflict"
    after = read_lines(path)
    assert after[:-1] == lines and after[-1]["id"] == appended["ids"][0]
    assert after[-1]["parentId"] == target["id"]
    assert all(e["type"] != "compaction" for e in after)
    assert events(client, "pi/compacted") == []


async def test_append_on_the_same_branch_during_a_compaction_is_kept(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    lines = read_lines(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("delay", delay=0.7))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/compact", {"sessionId": sid}, msg_id="compact-4")
        await settle(lambda: loopback.requests, what="the summarizer request")
        appended = await call(
            client,
            "pi/append",
            {"sessionId": sid, "entries": [user_msg("while it summarizes"), assistant_msg("noted")]},
        )
        result = await asyncio.wait_for(pending, TIMEOUT)
    after = read_lines(path)
    assert after[: len(lines)] == lines
    assert [e["id"] for e in after[len(lines) : -1]] == appended["ids"]
    assert after[-1] == result["entry"] and result["entry"]["parentId"] == appended["ids"][-1]


async def test_close_session_cancels_its_running_compaction(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/compact", {"sessionId": sid}, msg_id="compact-5")
        await settle(lambda: loopback.requests, what="the summarizer request")
        assert await call(client, "pi/closeSession", {"sessionId": sid}) is None
        error = await rpc_error(pending)
        assert error.code == -32800
        await settle(
            lambda: all(r.disconnected_at is not None for r in loopback.requests),
            what="the loopback to see the disconnect",
        )
    assert sha(path) == before


async def test_cancel_a_branch_summary_mid_stream(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    before = sha(path)
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start(loopback_settings(loopback.base_url))
        sid = await open_path(client, path)
        pending = send(
            client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"], "summarize": True}, msg_id="nav-1"
        )
        await settle(lambda: loopback.requests, what="the summarizer request")
        cancel(client, "nav-1")
        error = await rpc_error(pending)
        assert error.code == -32800
        await settle(
            lambda: all(r.disconnected_at is not None for r in loopback.requests),
            what="the loopback to see the disconnect",
        )
    assert sha(path) == before
    tree = await call(client, "pi/getTree", {"sessionId": sid, "limit": 0})
    assert tree["leafId"] == lines[-1]["id"]  # the leaf did not move
    assert events(client, "pi/treeNavigated") == []


async def test_cancel_report_overflow_mid_stream(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_path(client, path)
        pending = send(client, "pi/reportOverflow", {"sessionId": sid}, msg_id="ov-1")
        await settle(lambda: loopback.requests, what="the summarizer request")
        cancel(client, "ov-1")
        error = await rpc_error(pending)
        assert error.code == -32800
        ended = await wait_event(client, "pi/compactionEnded")
        assert ended["reason"] == "overflow" and ended["error"] and not ended.get("entry")
        failed = await wait_event(client, "pi/compactionFailed")
        assert (failed["reason"], failed["aborted"], failed["errorMessage"]) == ("overflow", True, None)
    assert sha(path) == before


# ------------------------------------------------------------------ pi/navigateTree


async def test_navigate_with_summary_writes_a_branch_summary_from_the_old_leaf(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    old_leaf = lines[-1]["id"]
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    client = await daemons.start()
    sid = await open_path(client, path)
    result = await call(
        client,
        "pi/navigateTree",
        {"sessionId": sid, "targetId": target["id"], "summarize": True, "label": "back here", "workDoneToken": "nav"},
    )
    entry = result["entry"]
    assert entry["type"] == "branch_summary" and entry["fromId"] == old_leaf
    assert entry["parentId"] == target["id"] and entry["summary"]
    written = read_lines(path)[len(lines) :]
    assert written[0] == entry and [e["type"] for e in written] == ["branch_summary", "label"]
    assert written[1]["label"] == "back here" and written[1]["targetId"] == entry["id"]
    assert result["leafId"] == written[1]["id"] and result["cancelled"] is False
    assert progress_kinds(client, "nav")[0] == "Begin" and progress_kinds(client, "nav")[-1] == "End"
    navigated = await wait_event(client, "pi/treeNavigated")
    assert navigated == {"sessionId": sid, "oldLeafId": old_leaf, "leafId": result["leafId"], "entry": entry}
    await wait_event(client, "pi/sessionChanged", lambda p: p["reason"] == "navigate")
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert context["messages"][-1]["role"] == "branchSummary"


async def test_navigate_without_summary_writes_nothing_and_returns_editor_text(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    before = sha(path)
    target = next(e for e in lines[5:] if e.get("message", {}).get("role") == "user")
    client = await daemons.start()
    sid = await open_path(client, path)
    result = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"]})
    assert result["leafId"] == target["parentId"] and result["cancelled"] is False
    assert result["editorText"] == target["message"]["content"] and result.get("entry") is None
    assert sha(path) == before
    navigated = await wait_event(client, "pi/treeNavigated")
    assert navigated["oldLeafId"] == lines[-1]["id"] and navigated["leafId"] == target["parentId"]
    # navigating to the leaf is a no-op
    same = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["parentId"]})
    assert same["leafId"] == target["parentId"] and sha(path) == before


# ------------------------------------------------------------------ hooks


async def test_before_compact_cancel_writes_nothing(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    client = await daemons.start(SMALL_KEEP, hooks=["beforeCompact"])
    client.hook_impl["beforeCompact"] = lambda params: {"cancel": True}
    sid = await open_path(client, path)
    error = await rpc_error(call(client, "pi/compact", {"sessionId": sid, "customInstructions": "be brief"}))
    assert error.code == -32800
    ((method, params),) = client.hook_calls
    assert method == "pi/beforeCompact"
    assert params["sessionId"] == sid and params["reason"] == "manual" and params["willRetry"] is False
    assert params["customInstructions"] == "be brief"
    prep = params["preparation"]
    assert set(prep) >= {
        "firstKeptEntryId",
        "messagesToSummarize",
        "turnPrefixMessages",
        "isSplitTurn",
        "tokensBefore",
        "previousSummary",
        "readFiles",
        "modifiedFiles",
        "serialized",
        "turnPrefixSerialized",
        "settings",
    }
    assert prep["settings"]["compaction"]["keepRecentTokens"] == 2000 and prep["serialized"]
    assert sha(path) == before


async def test_before_compact_supplies_the_compaction(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    async with LoopbackProvider() as loopback:
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP}, hooks=["beforeCompact"])
        client.hook_impl["beforeCompact"] = lambda params: {
            "compaction": {"summary": "## Goal\nWritten by the hook", "details": {"by": "hook"}}
        }
        sid = await open_path(client, path)
        result = await call(client, "pi/compact", {"sessionId": sid})
        assert loopback.requests == []  # the summarizer was never asked
    entry = result["entry"]
    assert entry["fromHook"] is True and entry["summary"] == "## Goal\nWritten by the hook"
    assert entry["details"] == {"by": "hook"}
    prep = client.hook_calls[0][1]["preparation"]
    assert entry["firstKeptEntryId"] == prep["firstKeptEntryId"] and entry["tokensBefore"] == prep["tokensBefore"]
    assert read_lines(path)[-1] == entry


async def test_before_compact_first_kept_off_the_path_falls_back_to_the_prepared_one(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP, hooks=["beforeCompact"])
    client.hook_impl["beforeCompact"] = lambda params: {
        "compaction": {"summary": "hook summary", "firstKeptEntryId": "not-on-path", "tokensBefore": 1}
    }
    sid = await open_path(client, path)
    result = await call(client, "pi/compact", {"sessionId": sid})
    prep = client.hook_calls[0][1]["preparation"]
    assert result["entry"]["firstKeptEntryId"] == prep["firstKeptEntryId"]
    assert result["entry"]["tokensBefore"] == 1 and result["entry"]["fromHook"] is True


async def test_before_compact_null_first_kept_is_a_retain_none_compaction(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP, hooks=["beforeCompact"])
    client.hook_impl["beforeCompact"] = lambda params: {
        "compaction": {"summary": "everything, summarized by the hook", "firstKeptEntryId": None}
    }
    sid = await open_path(client, path)
    entry = (await call(client, "pi/compact", {"sessionId": sid}))["entry"]
    assert entry["firstKeptEntryId"] == entry["id"] and entry["fromHook"] is True  # as Pi 1.6.0 writes it
    assert read_lines(path)[-1] == entry
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert [m["role"] for m in context["messages"]] == ["compactionSummary"]  # nothing kept


async def test_before_tree_cancel_and_summary(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    before = sha(path)
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    client = await daemons.start(hooks=["beforeTree"])
    client.hook_impl["beforeTree"] = lambda params: {"cancel": True}
    sid = await open_path(client, path)
    params = {"sessionId": sid, "targetId": target["id"], "summarize": True}
    cancelled = await call(client, "pi/navigateTree", params)
    assert cancelled["cancelled"] is True and cancelled["leafId"] == lines[-1]["id"]
    assert sha(path) == before
    asked = client.hook_calls[0][1]
    assert asked["targetId"] == target["id"] and asked["oldLeafId"] == lines[-1]["id"]
    assert asked["userWantsSummary"] is True and asked["entriesToSummarize"]
    assert asked["commonAncestorId"] == target["id"]

    client.hook_impl["beforeTree"] = lambda params: {"summary": {"summary": "Hook's branch summary"}}
    done = await call(client, "pi/navigateTree", params)
    assert done["entry"]["summary"] == "Hook's branch summary" and done["entry"]["fromHook"] is True
    assert read_lines(path)[-1] == done["entry"]


@pytest.mark.parametrize("action", ["accept", "edit", "reject"])
async def test_review_summary(daemons: Daemons, tmp_path: Path, action: str) -> None:
    path = session_file(tmp_path)
    before = sha(path)
    client = await daemons.start(SMALL_KEEP, hooks=["reviewSummary"])
    answers = {
        "accept": {"action": "accept"},
        "edit": {"action": "edit", "summary": "## Goal\nedited"},
        "reject": {"action": "reject"},
    }
    client.hook_impl["reviewSummary"] = lambda params: answers[action]
    sid = await open_path(client, path)
    pending = call(client, "pi/compact", {"sessionId": sid})
    if action == "reject":
        error = await rpc_error(pending)
        assert error.code == -32800 and sha(path) == before
    else:
        result = await pending
        assert read_lines(path)[-1] == result["entry"]
    ((method, asked),) = client.hook_calls
    assert method == "pi/reviewSummary" and asked["sessionId"] == sid and asked["kind"] == "compaction"
    assert asked["summary"].startswith("## Goal") and asked["tokensBefore"] > asked["estimatedTokensAfter"] > 0
    if action == "accept":
        assert result["entry"]["summary"] == asked["summary"]
    elif action == "edit":
        assert result["entry"]["summary"] == "## Goal\nedited"


async def test_review_of_a_branch_summary(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    client = await daemons.start(hooks=["reviewSummary"])
    client.hook_impl["reviewSummary"] = lambda params: {"action": "edit", "summary": "edited branch"}
    sid = await open_path(client, path)
    done = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"], "summarize": True})
    assert client.hook_calls[0][1]["kind"] == "branchSummary"
    assert done["entry"]["summary"] == "edited branch" and read_lines(path)[-1] == done["entry"]


async def test_review_reject_of_a_branch_summary_keeps_the_leaf(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path, entries=60)
    lines = read_lines(path)
    before = sha(path)
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    client = await daemons.start(hooks=["reviewSummary"])
    client.hook_impl["reviewSummary"] = lambda params: {"action": "reject"}
    sid = await open_path(client, path)
    error = await rpc_error(
        call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"], "summarize": True})
    )
    assert error.code == -32800 and sha(path) == before
    assert (await call(client, "pi/getTree", {"sessionId": sid, "limit": 0}))["leafId"] == lines[-1]["id"]


@pytest.mark.parametrize("failure", ["error", "timeout"])
async def test_a_failing_hook_is_ignored_and_the_summarizer_goes_on(
    daemons: Daemons, tmp_path: Path, failure: str
) -> None:
    path = session_file(tmp_path)

    async def hook(params: Any) -> Any:
        if failure == "error":
            raise RuntimeError("the hook broke")
        await asyncio.sleep(1.5)
        return {"cancel": True}

    client = await daemons.start({**SMALL_KEEP, "daemon": {"hookTimeoutSeconds": 0.3}}, hooks=["beforeCompact"])
    client.hook_impl["beforeCompact"] = hook
    sid = await open_path(client, path)
    result = await call(client, "pi/compact", {"sessionId": sid})
    assert len(client.hook_calls) == 1
    assert result["entry"].get("fromHook") is not True and result["entry"]["summary"].startswith("## Goal")
    assert read_lines(path)[-1] == result["entry"]


async def test_undeclared_hooks_are_never_asked(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP, hooks=[])
    client.hook_impl["beforeCompact"] = lambda params: {"cancel": True}
    sid = await open_path(client, path)
    result = await call(client, "pi/compact", {"sessionId": sid})
    assert result["entry"]["type"] == "compaction" and client.hook_calls == []


# ------------------------------------------------------------------ automatic compaction


async def test_auto_compaction_on_threshold_with_loop_guard(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    settings = {"contextWindow": 20000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000}}
    client = await daemons.start(settings)
    sid = await open_path(client, path)
    small = await call(
        client,
        "pi/append",
        {"sessionId": sid, "entries": [user_msg("next task"), assistant_msg("small", input_tokens=15000)]},
    )
    assert small["shouldCompact"] is False
    await asyncio.sleep(0.2)
    assert events(client, "pi/compactionStarted") == []

    big = await call(client, "pi/append", {"sessionId": sid, "entries": [assistant_msg("big", input_tokens=17000)]})
    assert big["shouldCompact"] is True
    started = await wait_event(client, "pi/compactionStarted")
    assert started == {"sessionId": sid, "reason": "threshold", "willRetry": False}
    ended = await wait_event(client, "pi/compactionEnded")
    compacted = await wait_event(client, "pi/compacted")
    assert compacted["reason"] == "threshold" and compacted["sessionId"] == sid
    assert ended["reason"] == "threshold" and ended["willRetry"] is False
    assert ended["entry"] == compacted["entry"] and not ended.get("error")
    assert read_lines(path)[-1] == ended["entry"]
    methods = [m for m, _ in client.events if m in ("pi/compactionStarted", "pi/compacted", "pi/compactionEnded")]
    assert methods == ["pi/compactionStarted", "pi/compacted", "pi/compactionEnded"]

    # loop guard: a second big assistant message in the same turn does not compact again
    again = await call(
        client, "pi/append", {"sessionId": sid, "entries": [assistant_msg("big again", input_tokens=18000)]}
    )
    assert again["shouldCompact"] is True
    await asyncio.sleep(0.5)
    assert len(events(client, "pi/compactionStarted")) == 1
    assert sum(e["type"] == "compaction" for e in read_lines(path)) == 1

    # a new turn (a user message) allows the next one
    turns = [
        [user_msg(f"turn {i}: " + "lorem ipsum dolor " * 330), assistant_msg(f"ok {i}", input_tokens=1000)]
        for i in range(6)
    ]
    await call(
        client,
        "pi/append",
        {
            "sessionId": sid,
            "entries": [*(e for turn in turns for e in turn), assistant_msg("big in a new turn", input_tokens=18000)],
        },
    )
    second = await settle(lambda: events(client, "pi/compactionEnded")[1:], what="the second auto-compaction")
    assert second[0].get("entry") and not second[0].get("error")
    assert sum(e["type"] == "compaction" for e in read_lines(path)) == 2


async def test_auto_compaction_is_cancelled_with_its_progress_bar(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path)
    settings = {"contextWindow": 20000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000}}
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**settings, **loopback_settings(loopback.base_url)})
        sid = await open_path(client, path)
        await call(
            client,
            "pi/append",
            {"sessionId": sid, "entries": [user_msg("go"), assistant_msg("big", input_tokens=17000)]},
        )
        written = path.read_bytes()
        await wait_event(client, "pi/compactionStarted")
        await settle(lambda: loopback.requests, what="the summarizer request")
        (token,) = await settle(lambda: list(client.progress_reports), what="the background bar")
        cancel_progress(client, token)
        ended = await wait_event(client, "pi/compactionEnded")
        assert ended["reason"] == "threshold" and ended["error"] and not ended.get("entry")
        failed = await wait_event(client, "pi/compactionFailed")
        assert failed == {"sessionId": sid, "reason": "threshold", "errorMessage": None, "aborted": True,
                          "willRetry": False, "errorReason": "cancelled"}
        await settle(
            lambda: all(r.disconnected_at is not None for r in loopback.requests),
            what="the loopback to see the disconnect",
        )
    assert path.read_bytes() == written and events(client, "pi/compacted") == []
    assert progress_kinds(client, token)[-1] == "End"


async def test_fix_report_overflow_compacts_with_will_retry_and_a_refusal_sends_no_lone_end(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = session_file(tmp_path)
    client = await daemons.start(SMALL_KEEP)
    sid = await open_path(client, path)
    result = await call(client, "pi/reportOverflow", {"sessionId": sid, "workDoneToken": "ov"})
    assert list(result) == ["entry", "tokensBefore", "tokensAfter", "estimatedTokensAfter", "usage", "outcome",
                            "masked", "gate", "requestShape", "alreadyFits"]
    assert result["alreadyFits"] is False
    started = await wait_event(client, "pi/compactionStarted")
    assert started == {"sessionId": sid, "reason": "overflow", "willRetry": True}
    ended = await wait_event(client, "pi/compactionEnded")
    assert ended["willRetry"] is True and ended["entry"] == result["entry"] and ended["reason"] == "overflow"
    assert ended["result"] == {k: v for k, v in result.items() if k != "alreadyFits"}  # the same fields
    assert events(client, "pi/compactionFailed") == []
    assert (await wait_event(client, "pi/compacted"))["reason"] == "overflow"
    assert read_lines(path)[-1] == result["entry"]
    assert progress_kinds(client, "ov")[-1] == "End"
    # a second overflow in the same turn: recovery already attempted; refused before it started, so no
    # lone compactionEnded (Pi sends one): started and ended always come in pairs
    error = await rpc_error(call(client, "pi/reportOverflow", {"sessionId": sid}))
    assert error.code == -32004
    refused = await wait_event(client, "pi/compactionFailed")
    assert refused == {"sessionId": sid, "reason": "overflow", "errorMessage": OVERFLOW_RETRIED, "aborted": False,
                       "willRetry": False, "errorReason": "nothingToCompact"}
    assert len(events(client, "pi/compactionStarted")) == len(events(client, "pi/compactionEnded")) == 1


# ------------------------------------------------------------------ robustness


async def test_malformed_frames_and_invalid_params_do_not_stop_the_daemon(daemons: Daemons, tmp_path: Path) -> None:
    path = session_file(tmp_path, entries=30)
    before = sha(path)
    client = await daemons.start()
    sid = await open_path(client, path)
    stdin = client._server.stdin  # type: ignore[union-attr]
    assert stdin is not None
    for body in (b"{not json", b'{"jsonrpc": "2.0", "id": "x", "method": 5}', b"[]", b'"just a string"'):
        stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    await stdin.drain()
    error = await rpc_error(call(client, "pi/append", {"sessionId": sid, "entries": [{"type": 7}]}))
    assert error.code == -32602
    error = await rpc_error(call(client, "pi/compact", {"sessionId": sid, "customInstructions": ["no"]}))
    assert error.code == -32602 and error.data["field"] == "customInstructions"
    error = await rpc_error(call(client, "pi/navigateTree", {"sessionId": sid}))
    assert error.code == -32602 and error.data["field"] == "targetId"
    error = await rpc_error(call(client, "pi/unknown", {}))
    assert error.code == -32601
    assert sha(path) == before
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert context["messages"]
    appended = await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("still here")]})
    assert read_lines(path)[-1]["id"] == appended["ids"][0]
    assert client._server.returncode is None  # type: ignore[union-attr]

"""``pi/compact {draft: true}`` and ``pi/commitDraft`` against the real daemon.

A draft writes nothing; its commit writes exactly the entry ``pi/compact`` would
have, under the leaf rules of that moment, without asking the model again.
"""

from __future__ import annotations

import asyncio
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    TIMEOUT,
    Daemons,
    assistant_msg,
    call,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    generated,
    loopback_settings,
    progress_kinds,
    read_lines,
    user_msg,
    wait_event,
)
from tests.e2e.test_summarize import DRAFT_KEYS, SMALL_KEEP, hold, release
from tests.loopback_provider import Fault, LoopbackProvider

pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


async def rpc_error(awaitable: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(awaitable, TIMEOUT)
    return info.value


async def open_session(client: Any, path: Path) -> str:
    return (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]  # type: ignore[no-any-return]


def context_summaries(context: dict[str, Any]) -> list[str]:
    return [m["summary"] for m in context["messages"] if m["role"] == "compactionSummary"]


async def test_a_draft_writes_nothing_and_its_commit_writes_it_without_asking_the_model_again(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    before = path.read_bytes()
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_session(client, path)
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True, "workDoneToken": "tok-d"})
        asked = len(loopback.requests)
        assert list(draft) == DRAFT_KEYS and draft["kind"] == "compaction" and draft["sessionId"] == sid
        assert path.read_bytes() == before  # nothing written
        assert events(client, "pi/compacted") == [] and asked >= 1
        assert draft["tokensBefore"] > draft["estimatedTokensAfter"] > 0
        assert datetime.fromisoformat(draft["expiresAt"].replace("Z", "+00:00")) > datetime.now(UTC)
        assert set(draft["gate"]) == {"added"} and draft["usage"]["output"] > 0
        assert progress_kinds(client, "tok-d")[0] == "Begin" and progress_kinds(client, "tok-d")[-1] == "End"

        result = await call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]})
        assert len(loopback.requests) == asked  # the commit asked no model
    entry = result["entry"]
    assert entry["type"] == "compaction" and entry["summary"] == draft["summary"]
    assert entry["firstKeptEntryId"] == draft["firstKeptEntryId"] and entry["details"] == draft["details"]
    assert entry["tokensBefore"] == draft["tokensBefore"] == result["tokensBefore"]
    assert result["outcome"] == "compacted" and result["usage"] == draft["usage"] == entry["usage"]
    assert result["estimatedTokensAfter"] == result["tokensAfter"] == draft["estimatedTokensAfter"]
    assert path.read_bytes().startswith(before) and read_lines(path)[-1] == entry  # one line appended
    assert len(read_lines(path)) == before.count(b"\n") + 1
    compacted = await wait_event(client, "pi/compacted")
    assert compacted == {"sessionId": sid, "entry": entry, "reason": "manual"}

    again = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]}))
    assert again.data["reason"] == "invalidParams" and again.data["draftState"] == "committed"
    assert read_lines(path)[-1] == entry


async def test_an_edited_summary_is_written_as_given(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    client = await daemons.start(SMALL_KEEP)  # the offline summarizer
    sid = await open_session(client, path)
    draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
    edited = "## Goal\n- Edited by hand: the gate must not add anything to this\n"
    result = await call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"], "summary": edited})
    assert result["entry"]["summary"] == edited == read_lines(path)[-1]["summary"]
    assert result["gate"] == {"added": [a for a in draft["gate"]["added"] if a["text"] in edited]}
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert context_summaries(context) == [edited]


async def test_entries_appended_after_the_draft_stay_in_the_kept_part(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    client = await daemons.start(SMALL_KEEP)
    sid = await open_session(client, path)
    draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
    appended = await call(client, "pi/append", {"sessionId": sid, "entries": [
        user_msg("one more question after the draft"), assistant_msg("and its answer")]})
    result = await call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]})
    assert result["entry"]["parentId"] == appended["leafId"]  # on the newest leaf
    context = await call(client, "pi/getContext", {"sessionId": sid})
    texts = [str(m.get("content")) for m in context["messages"]]
    assert context_summaries(context) == [draft["summary"]]
    assert any("one more question after the draft" in t for t in texts)  # kept, not summarized away


async def test_a_draft_whose_range_no_longer_holds_is_a_conflict(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    client = await daemons.start(SMALL_KEEP)
    sid = await open_session(client, path)
    draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
    await call(client, "pi/compact", {"sessionId": sid, "customInstructions": "x"})  # another one, written since
    written = path.read_bytes()
    refused = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]}))
    assert refused.data["reason"] == "conflict" and path.read_bytes() == written
    failed = await wait_event(client, "pi/compactionFailed")
    assert failed["reason"] == "manual" and failed["errorReason"] == "conflict"

    other = generated(tmp_path / "t.jsonl", entries=150, seed=7)
    tid = await open_session(client, other)
    second = await call(client, "pi/compact", {"sessionId": tid, "draft": True})
    untouched = other.read_bytes()
    target = second["firstKeptEntryId"]  # the leaf moves back into the kept part: the range is gone
    await call(client, "pi/navigateTree", {"sessionId": tid, "targetId": target})
    moved = await rpc_error(call(client, "pi/commitDraft", {"sessionId": tid, "draftId": second["draftId"]}))
    assert moved.data["reason"] == "conflict" and other.read_bytes() == untouched


async def test_drafts_that_cannot_be_committed_here_say_why(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=60, seed=3)
    client = await daemons.start(SMALL_KEEP)
    sid = await open_session(client, path)
    unknown = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": "no-such-draft"}))
    assert unknown.data["reason"] == "invalidParams" and unknown.data["draftState"] == "unknown"
    assert "draftId" in str(unknown)
    entries = [e for e in read_lines(path) if e["type"] != "session"][-12:]
    branch = await call(client, "pi/summarize", {"sessionId": sid, "kind": "branchSummary",
                                                 "entriesToSummarize": entries})
    assert branch["expiresAt"] is not None
    refused = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": branch["draftId"]}))
    assert refused.data["reason"] == "invalidParams" and "pi/navigateTree" in str(refused)
    other = await call(client, "pi/createSession", {"cwd": str(tmp_path)})
    elsewhere = await rpc_error(call(client, "pi/commitDraft", {"sessionId": other["sessionId"],
                                                                "draftId": branch["draftId"]}))
    assert elsewhere.data["draftState"] == "unknown"  # a draft belongs to its session
    before = path.read_bytes()
    nothing = await rpc_error(call(client, "pi/compact", {"sessionId": other["sessionId"], "draft": True}))
    assert nothing.data["reason"] == "nothingToCompact" and path.read_bytes() == before


async def test_a_session_held_by_a_live_pi_is_drafted_but_pi_writes_its_compactions(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    client = await daemons.start(SMALL_KEEP)
    sid = await open_session(client, path)
    child = hold(path, "--pid", str(os.getpid()), "--socket", str(tmp_path / "pi-x.sock"))  # stands in for Pi
    try:
        before = path.read_bytes()
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})  # not forwarded: no write
        assert draft["kind"] == "compaction" and path.read_bytes() == before
        refused = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]}))
        assert refused.data["reason"] == "liveWriter" and refused.data["piCommand"] == "/compact"
        assert path.read_bytes() == before
    finally:
        release(child)


async def test_a_compaction_of_the_same_range_writes_the_kept_draft(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok"))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = await open_session(client, path)
        draft = await call(client, "pi/compact", {"sessionId": sid, "draft": True})
        asked = len(loopback.requests)
        result = await call(client, "pi/compact", {"sessionId": sid})
        assert len(loopback.requests) == asked  # no second summary of the same range
    assert result["entry"]["summary"] == draft["summary"] == read_lines(path)[-1]["summary"]
    again = await rpc_error(call(client, "pi/commitDraft", {"sessionId": sid, "draftId": draft["draftId"]}))
    assert again.data["draftState"] == "committed"

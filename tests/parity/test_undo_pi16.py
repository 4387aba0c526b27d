"""``pi/undo`` through the real daemon; Pi 1.6.0 reloading the file agrees.

After undoing a compaction (or a navigation's branch summary) while it is the
leaf, the daemon's context and Pi 1.6.0's context of the reloaded file both
equal the context before it; the undone entry stays in the file. An entry that
is no longer the leaf, or that is not a summary, is refused and nothing is written.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    Daemons,
    assistant_msg,
    call,
    daemons_fixture,
    events,
    generated,
    read_lines,
    user_msg,
    wait_event,
)
from tests.parity.oracle import PiOracle
from tests.parity.test_masking_pi16 import context_of, pi_messages

pytestmark = pytest.mark.parity
daemons = daemons_fixture
SMALL_KEEP = {"compaction": {"keepRecentTokens": 2000}}


async def test_undo_a_compaction_restores_the_context_for_us_and_for_pi(
        pi16: PiOracle, daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=200, seed=3)
    client = await daemons.start(SMALL_KEEP)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    before = await context_of(client, sid)
    leaf = (await call(client, "pi/getTree", {"sessionId": sid}))["leafId"]
    compacted = (await call(client, "pi/compact", {"sessionId": sid}))["entry"]
    assert await context_of(client, sid) != before

    undone = await call(client, "pi/undo", {"sessionId": sid, "entryId": compacted["id"]})
    assert undone["leafId"] == undone["entry"]["id"] and undone["entry"]["parentId"] == leaf
    assert undone["entry"]["customType"] == "pi-sessiond.undo"
    lines = read_lines(path)
    assert lines[-2] == compacted and lines[-1] == undone["entry"]  # the compaction stays, on a side branch
    assert await context_of(client, sid) == before == pi_messages(pi16, path)


async def test_undo_a_branch_summary(pi16: PiOracle, daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "b.jsonl", entries=120, seed=5)
    lines = read_lines(path)
    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    target = next(e for e in lines[20:] if e.get("message", {}).get("role") == "user")["id"]
    moved = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target, "summarize": True})
    summary = moved["entry"]
    assert summary["type"] == "branch_summary"
    at_target = json.dumps((await call(client, "pi/getContext", {"sessionId": sid, "leafId": summary["parentId"]}))[
        "messages"])
    await call(client, "pi/undo", {"sessionId": sid, "entryId": summary["id"]})
    assert await context_of(client, sid) == at_target == pi_messages(pi16, path)


async def test_only_the_leaf_summary_can_be_undone_and_auto_compaction_waits(
        daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=200, seed=3)
    settings = {"contextWindow": 40000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 2000}}
    client = await daemons.start(settings)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    compacted = (await call(client, "pi/compact", {"sessionId": sid}))["entry"]
    user = next(e for e in read_lines(path)[1:] if e.get("message", {}).get("role") == "user")
    with pytest.raises(JsonRpcException) as not_summary:
        await call(client, "pi/undo", {"sessionId": sid, "entryId": user["id"]})
    assert not_summary.value.code == -32602
    await call(client, "pi/undo", {"sessionId": sid, "entryId": compacted["id"]})
    size = len(read_lines(path))
    with pytest.raises(JsonRpcException) as again:
        await call(client, "pi/undo", {"sessionId": sid, "entryId": compacted["id"]})
    assert again.value.data["reason"] == "conflict" and len(read_lines(path)) == size

    # over the threshold, but less than 10% of the window above the context at the undo: no auto-compaction
    over = await call(client, "pi/append", {"sessionId": sid, "entries": [
        user_msg("go on"), assistant_msg("ok", input_tokens=36_500)]})
    assert over["shouldCompact"] is True
    await call(client, "pi/getStats", {"sessionId": sid})  # a round trip: a started job would have announced itself
    assert events(client, "pi/compactionStarted") == []
    # grown past the floor: the next answer compacts again
    await call(client, "pi/append", {"sessionId": sid, "entries": [
        user_msg("more"), assistant_msg("ok", input_tokens=60_000)]})
    started = await wait_event(client, "pi/compactionStarted")
    assert started["reason"] == "threshold"

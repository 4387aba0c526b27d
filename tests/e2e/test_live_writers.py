"""Beside a running Pi: another writer followed exactly, and the ``liveWriter`` guard.

The other writer is ``tests/soak/live_writer.py``: Pi-style lines (parent =
the file's last entry, one write each, no lock). Every check loads the file
as Pi does (leaf = the last entry) and counts the other writer's entries
that are missing from the context: a compaction parented on an old leaf
would leave them on a side branch.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
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
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    generated,
    loopback_settings,
    send,
    settle,
    user_msg,
    wait_event,
)
from tests.loopback_provider import Fault, LoopbackProvider
from tests.soak.live_writer import PiStyleWriter, append_one

from pi_protocol.errors import LIVE_WRITER
from pi_sessiond.store.guard import lock_path_of
from pi_sessiond.store.layout import now_iso
from pi_sessiond.store.session import Session

SMALL_KEEP = {"compaction": {"keepRecentTokens": 2000}}
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


def context_ids(path: Path) -> set[str]:
    """Ids of the entries in the context of the file's last entry, loaded as Pi loads it."""
    session = Session.open(path)
    return {p.entry.id for p in session.projection().entries}


def compactions_on_live_branch(path: Path) -> tuple[int, int]:
    """(compactions on the path of the file's last entry, compactions in the file)."""
    session = Session.open(path)
    on_path = {e.id for e in session.path_to()}
    all_ = [e.id for e in session.entries if e.type == "compaction"]
    return sum(1 for eid in all_ if eid in on_path), len(all_)


async def rpc_error(awaitable: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(awaitable, TIMEOUT)
    return info.value


def data_of(error: JsonRpcException) -> dict[str, Any]:
    data = error.data
    return data if isinstance(data, dict) else {}


async def test_a_writer_appending_while_a_summary_streams_stays_in_the_context(
    daemons: Daemons, tmp_path: Path
) -> None:
    """Regression: the compaction was parented on the leaf from before the summary."""
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok", chunk_delay=0.05, delay=0.3))
        client = await daemons.start({**loopback_settings(loopback.base_url), **SMALL_KEEP})
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        pending = send(client, "pi/compact", {"sessionId": sid}, "c1")
        await settle(lambda: loopback.requests, what="the summary request")
        writer = PiStyleWriter(path, count=15, rate=50)
        writer.start()
        result = await asyncio.wait_for(pending, TIMEOUT)
        await asyncio.to_thread(writer.join, TIMEOUT)
        assert writer.error is None and len(writer.ids) == 15
        kept = context_ids(path)
        assert [eid for eid in writer.ids if eid not in kept] == []  # 15 of 15 in the context
        assert result["entry"]["id"] in kept  # the compaction is on the live branch
        tree = await call(client, "pi/getEntries", {"sessionId": sid, "since": "root"})
        known = {e["id"] for e in tree["entries"]}
        assert [eid for eid in writer.ids if eid not in known] == []  # the daemon folded every one in


def recent_pi_file(tmp_path: Path) -> Path:
    """A session Pi appended to just now (it is still running, without the extension)."""
    path = generated(tmp_path / "live.jsonl", entries=150, seed=3)
    append_one(path, 0, "pi")
    append_one(path, 1, "pi")
    return path


async def test_compact_and_navigate_with_a_label_are_refused_after_a_recent_foreign_append(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = recent_pi_file(tmp_path)
    before = path.read_bytes()
    client = await daemons.start(SMALL_KEEP)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    refused = await rpc_error(call(client, "pi/compact", {"sessionId": sid}))
    assert refused.code == LIVE_WRITER
    assert data_of(refused)["reason"] == "liveWriter"
    assert data_of(refused)["lastForeignAppend"].startswith(now_iso()[:10])
    assert "force" in str(refused) and "Pi" in str(refused)
    first = Session.open(path).entries[0].id
    label = await rpc_error(call(client, "pi/navigateTree", {"sessionId": sid, "targetId": first, "label": "x"}))
    assert label.code == LIVE_WRITER
    assert path.read_bytes() == before  # nothing written, no summarizer asked
    appended = await call(client, "pi/append", {"sessionId": sid, "entries": [
        {"type": "session_info", "name": "still accepted"}]})
    assert appended["ids"]


async def test_force_compacts_on_the_newest_leaf(daemons: Daemons, tmp_path: Path) -> None:
    path = recent_pi_file(tmp_path)
    client = await daemons.start(SMALL_KEEP)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    append_one(path, 2, "pi")  # Pi goes on after we opened it
    result = await call(client, "pi/compact", {"sessionId": sid, "force": True})
    assert result["entry"]["parentId"] == "pi000002"
    assert {"pi000000", "pi000001", "pi000002", result["entry"]["id"]} <= context_ids(path)


async def test_auto_compaction_is_refused_too_and_says_why(daemons: Daemons, tmp_path: Path) -> None:
    path = recent_pi_file(tmp_path)
    settings = {"contextWindow": 20000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000}}
    client = await daemons.start(settings)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    big = await call(client, "pi/append", {"sessionId": sid, "entries": [
        user_msg("next task"), assistant_msg("big", input_tokens=17000)]})
    assert big["shouldCompact"] is True  # the append itself is accepted
    failed = await wait_event(client, "pi/compactionFailed")
    assert failed["reason"] == "threshold" and failed["errorReason"] == "liveWriter"
    assert events(client, "pi/compacted") == []


async def test_reads_show_what_pi_appended_without_a_write_of_ours(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40, seed=2)
    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    append_one(path, 0, "pi")
    append_one(path, 1, "pi")
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert "[pi] done with step 1." in json.dumps(context["messages"][-1])  # the leaf followed Pi's turn
    again = await call(client, "pi/openSession", {"path": str(path)})
    assert again["sessionId"] == sid and again["leafId"] == "pi000001"


async def test_appends_of_an_exited_pi_lock_holder_do_not_trigger_the_guard(daemons: Daemons, tmp_path: Path) -> None:
    path = recent_pi_file(tmp_path)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    lock_path_of(path).write_text(json.dumps({"pid": gone.pid, "program": "pi", "since": now_iso()}) + "\n")
    client = await daemons.start(SMALL_KEEP)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    result = await call(client, "pi/compact", {"sessionId": sid})
    assert result["outcome"] == "compacted"


async def test_live_writer_seconds_zero_turns_the_guard_off(daemons: Daemons, tmp_path: Path) -> None:
    path = recent_pi_file(tmp_path)
    client = await daemons.start({**SMALL_KEEP, "daemon": {"liveWriterSeconds": 0}})
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    assert (await call(client, "pi/compact", {"sessionId": sid}))["outcome"] == "compacted"


async def test_an_idle_daemon_releases_the_lock_and_retakes_it(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40, seed=5)
    client = await daemons.start({"daemon": {"lockIdleSeconds": 0.2}})
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    await call(client, "pi/append", {"sessionId": sid, "entries": [{"type": "session_info", "name": "a"}]})
    other = Session.open(path)

    def other_can_write() -> bool:
        try:
            other.append([{"type": "session_info", "name": "b"}])
        except Exception:
            return False
        return True

    await settle(other_can_write, what="the idle daemon to release its lock")
    refused = await rpc_error(call(client, "pi/append", {"sessionId": sid, "entries": [
        {"type": "session_info", "name": "c"}]}))
    assert data_of(refused)["reason"] == "locked"
    other.close()
    done = await call(client, "pi/append", {"sessionId": sid, "entries": [{"type": "session_info", "name": "c"}]})
    entries = (await call(client, "pi/getEntries", {"sessionId": sid, "since": "root"}))["entries"]
    assert [e.get("name") for e in entries if e["type"] == "session_info"] == ["a", "b", "c"]
    assert done["ids"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LOOPBACK_KEY": LOOPBACK_KEY}
    return subprocess.run([sys.executable, "-m", "pi_sessiond", *args], capture_output=True, text=True,
                          timeout=120, env=env)


def test_the_cli_refuses_without_force_and_writes_on_the_newest_leaf_with_it(tmp_path: Path) -> None:
    path = recent_pi_file(tmp_path)
    before = path.read_bytes()
    refused = cli("compact", str(path), "--keep-recent-tokens", "2000", "-q")
    assert refused.returncode == 1 and "--force" in refused.stderr, refused.stderr
    assert path.read_bytes() == before
    done = cli("compact", str(path), "--keep-recent-tokens", "2000", "-q", "--force", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["entry"]["parentId"] == "pi000001"


async def test_masking_and_undo_are_guarded_too(daemons: Daemons, tmp_path: Path) -> None:
    """Masking edits and an undo beside a live writer would be orphaned like a compaction."""
    path = recent_pi_file(tmp_path)
    client = await daemons.start({"compaction": {"keepRecentTokens": 200,
                                                 "masking": {"minTokens": 1, "olderThanTokens": 0}}})
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    dry = await call(client, "pi/mask", {"sessionId": sid, "dryRun": True})  # a dry run writes nothing: allowed
    before = path.read_bytes()
    for method, params in (("pi/mask", {}), ("pi/unmask", {"entryIds": [e["targetId"] for e in dry["edits"]]})):
        refused = await rpc_error(call(client, method, {"sessionId": sid, **params}))
        assert refused.code == LIVE_WRITER, method
    assert path.read_bytes() == before
    forced = await call(client, "pi/mask", {"sessionId": sid, "force": True})
    assert len(forced["edits"]) == len(dry["edits"])
    compacted = await call(client, "pi/compact", {"sessionId": sid, "force": True})
    undo = {"sessionId": sid, "entryId": compacted["entry"]["id"]}
    assert (await rpc_error(call(client, "pi/undo", undo))).code == LIVE_WRITER
    undone = await call(client, "pi/undo", {**undo, "force": True})
    assert undone["entry"]["parentId"] == compacted["entry"]["parentId"]

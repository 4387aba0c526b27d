"""``pi/summarize`` against the real daemon: a DRAFT that writes nothing, even on a session a live Pi holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    TIMEOUT,
    Daemons,
    call,
    cli_json,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    generated,
    progress_kinds,
    read_lines,
    wait_event,
)

SMALL_KEEP = {"compaction": {"keepRecentTokens": 2000}}
DRAFT_KEYS = ["draftId", "sessionId", "kind", "summary", "firstKeptEntryId", "tokensBefore",
              "estimatedTokensAfter", "details", "usage", "gate", "expiresAt"]
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


def hold(path: Path, *extra: str) -> subprocess.Popen[str]:
    """A live Pi's lock on ``path`` (``pi-sessiond hold-lock``), held until the returned child's stdin closes."""
    child = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "hold-lock", str(path), "--pid", "4242", *extra],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and json.loads(child.stdout.readline())["ready"] is True
    return child


def release(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    child.wait(timeout=TIMEOUT)


async def test_a_draft_of_the_leaf_writes_nothing_and_matches_the_dry_run(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    before = path.read_bytes()
    client = await daemons.start(SMALL_KEEP)
    draft = await call(client, "pi/summarize", {"path": str(path), "workDoneToken": "tok-s"})
    assert list(draft) == DRAFT_KEYS
    assert draft["kind"] == "compaction" and draft["summary"].startswith("## Goal")
    assert path.read_bytes() == before  # never writes
    dry = cli_json("compact", str(path), "--dry-run", "--json", "--keep-recent-tokens", "2000")
    assert draft["firstKeptEntryId"] == dry["firstKeptEntryId"]
    assert draft["tokensBefore"] == dry["tokensBefore"] > draft["estimatedTokensAfter"] > 0
    assert set(draft["gate"]) == {"added"}  # the fidelity gate ran on the draft; what it added is in the summary
    assert all(set(a) == {"kind", "text"} for a in draft["gate"]["added"])
    kinds = progress_kinds(client, "tok-s")
    assert kinds[0] == "Begin" and kinds[-1] == "End"


async def test_a_session_held_by_a_live_pi_is_summarized_from_pis_preparation(daemons: Daemons,
                                                                               tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    preparation: dict[str, Any] = cli_json("compact", str(path), "--dry-run", "--json",
                                           "--keep-recent-tokens", "2000")
    child = hold(path)
    try:
        before = path.read_bytes()
        client = await daemons.start(SMALL_KEEP)
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        with pytest.raises(JsonRpcException) as refused:  # Pi holds it: a write is refused naming Pi
            await call(client, "pi/setLabel", {"sessionId": sid, "entryId": preparation["firstKeptEntryId"],
                                               "label": "x"})
        assert refused.value.data["reason"] == "locked"
        assert refused.value.data["holder"] == {"pid": 4242, "program": "pi"}
        draft = await call(client, "pi/summarize", {"sessionId": sid, "preparation": preparation,
                                                    "reason": "threshold"})
        assert draft["firstKeptEntryId"] == preparation["firstKeptEntryId"]
        assert draft["tokensBefore"] == preparation["tokensBefore"]
        assert draft["summary"].startswith("## Goal")
        assert path.read_bytes() == before
    finally:
        release(child)


async def test_a_branch_draft_summarizes_the_entries_given(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40, seed=3)
    entries = [e for e in read_lines(path) if e["type"] != "session"][-12:]
    client = await daemons.start()
    draft = await call(client, "pi/summarize", {"path": str(path), "kind": "branchSummary",
                                                "entriesToSummarize": entries})
    assert draft["kind"] == "branchSummary" and draft["summary"].strip()
    assert draft["firstKeptEntryId"] is None
    assert set(draft["details"]) == {"readFiles", "modifiedFiles"}
    with pytest.raises(JsonRpcException) as missing:
        await call(client, "pi/summarize", {"path": str(path), "kind": "branchSummary"})
    assert missing.value.data["reason"] == "invalidParams"


async def test_editors_are_told_when_a_live_pi_takes_and_releases_a_session(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=20, seed=2)
    socket = str(tmp_path / "pi-x.sock")
    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    child = hold(path, "--pid", str(os.getpid()), "--socket", socket)  # this test stands in for Pi
    try:
        live = await wait_event(client, "pi/sessionLive", timeout=TIMEOUT)
        assert live == {"sessionId": sid, "path": str(path), "live": True,
                        "holder": {"pid": os.getpid(), "program": "pi", "socket": socket}}
        with open(path, "a") as fh:  # Pi appends: editors are told to refresh
            fh.write(json.dumps({"type": "session_info", "id": "ffff0001", "parentId": None,
                                 "timestamp": "2026-01-01T00:00:00.000Z", "name": "x"}) + "\n")
        await wait_event(client, "pi/sessionChanged", lambda p: p["reason"] == "external", timeout=TIMEOUT)
        entries = (await call(client, "pi/getEntries", {"sessionId": sid, "ids": ["ffff0001"]}))["entries"]
        assert [e["name"] for e in entries] == ["x"]  # folded in: editors see what Pi wrote
    finally:
        release(child)  # the body loses its socket: this (still running) process no longer holds it
    released = await wait_event(client, "pi/sessionLive", lambda p: p["live"] is False, timeout=TIMEOUT)
    assert released == {"sessionId": sid, "path": str(path), "live": False}


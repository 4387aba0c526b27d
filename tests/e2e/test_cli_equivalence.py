"""Each subcommand's ``--json`` is the matching ``pi/*`` result for the same file and settings.

The command line drives the daemon's service in-process (``cli/local.py``); this
runs every file subcommand and its method on copies of the same sessions (the
real Pi fixture and a generated branchy one) and compares: ``context`` ↔
``pi/getContext``, ``stats`` ↔ ``pi/getStats``, ``tree --json`` ↔
``pi/getEntries {since: "root"}`` plus the leaf, ``compact --dry-run`` ↔ the
``pi/beforeCompact`` preparation, ``compact`` ↔ ``pi/compact``, ``navigate`` ↔
``pi/navigateTree``. Entries written by both sides differ only in their fresh
``id`` and ``timestamp``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import Daemons, call, cli_json, daemons_fixture, generated  # noqa: F401

FRESH = ("id", "parentId", "timestamp")  # assigned when written (ids are random, parents are earlier fresh ids)
SETTINGS = {"compaction": {"keepRecentTokens": 3000}}


def without_fresh(entry: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if entry is None else {k: v for k, v in entry.items() if k not in FRESH}


@pytest.fixture(params=["fixture", "branchy"])
def session(request: pytest.FixtureRequest, tmp_path: Path, real_session: Path) -> Path:
    if request.param == "fixture":
        path = tmp_path / "real.jsonl"
        shutil.copyfile(real_session, path)
        return path
    return generated(tmp_path / "branchy.jsonl", entries=120, shape="branchy", seed=4)


def copy(path: Path, name: str) -> Path:
    target = path.with_name(name)
    shutil.copyfile(path, target)
    return target


async def test_reads_are_the_daemon_s_answers(daemons: Daemons, session: Path) -> None:
    client = await daemons.start(SETTINGS)
    opened = await call(client, "pi/openSession", {"path": str(session)})
    sid = opened["sessionId"]
    assert cli_json("context", str(session), "--json") == await call(client, "pi/getContext", {"sessionId": sid})
    assert cli_json("stats", str(session), "--json") == await call(client, "pi/getStats", {"sessionId": sid})
    entries = await call(client, "pi/getEntries", {"sessionId": sid, "since": "root"})
    assert cli_json("tree", str(session), "--json") == {"leafId": opened["leafId"], **entries}
    leaf = entries["entries"][len(entries["entries"]) // 2]["id"]
    at_leaf = await call(client, "pi/getContext", {"sessionId": sid, "leafId": leaf})
    assert cli_json("context", str(session), "--leaf", leaf, "--json") == at_leaf


async def test_dry_run_is_the_before_compact_preparation(daemons: Daemons, session: Path) -> None:
    client = await daemons.start(SETTINGS, hooks=["beforeCompact"])
    client.hook_impl["beforeCompact"] = lambda params: {"cancel": True}
    sid = (await call(client, "pi/openSession", {"path": str(session)}))["sessionId"]
    with pytest.raises(Exception, match="cancel"):
        await call(client, "pi/compact", {"sessionId": sid, "customInstructions": "focus on tests"})
    ((_method, payload),) = client.hook_calls
    preparation = {k: v for k, v in payload["preparation"].items() if k != "settings"}
    dry = cli_json("compact", str(session), "--dry-run", "--keep-recent-tokens", "3000",
                   "--instructions", "focus on tests", "--json")
    assert dry == preparation


async def test_compact_writes_what_pi_compact_writes(daemons: Daemons, session: Path) -> None:
    by_cli, by_daemon = copy(session, "cli.jsonl"), copy(session, "daemon.jsonl")
    client = await daemons.start(SETTINGS)
    sid = (await call(client, "pi/openSession", {"path": str(by_daemon)}))["sessionId"]
    expected = await call(client, "pi/compact", {"sessionId": sid})
    result = cli_json("compact", str(by_cli), "--keep-recent-tokens", "3000", "--json")
    assert without_fresh(result["entry"]) == without_fresh(expected["entry"])
    assert {k: v for k, v in result.items() if k != "entry"} == {k: v for k, v in expected.items() if k != "entry"}


async def test_navigate_is_pi_navigate_tree(daemons: Daemons, session: Path) -> None:
    by_cli, by_daemon = copy(session, "cli.jsonl"), copy(session, "daemon.jsonl")
    client = await daemons.start(SETTINGS)
    sid = (await call(client, "pi/openSession", {"path": str(by_daemon)}))["sessionId"]
    entries = (await call(client, "pi/getEntries", {"sessionId": sid, "since": "root"}))["entries"]
    target = next(e["id"] for e in entries[len(entries) // 3:] if e["type"] == "message")
    params = {"sessionId": sid, "targetId": target, "summarize": True, "label": "here"}
    expected = await call(client, "pi/navigateTree", params)
    result = cli_json("navigate", str(by_cli), "--summarize", target, "--label", "here", "--json")
    assert without_fresh(result.get("entry")) == without_fresh(expected.get("entry"))
    assert result.get("editorText") == expected.get("editorText") and result["cancelled"] == expected["cancelled"]

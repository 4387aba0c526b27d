"""``pi/fork`` through the real daemon, against Pi 1.6.0's ``createBranchedSession``.

A session Pi 1.6.0 wrote, with labels right before compactions: forking at
every entry through the daemon subprocess gives the file Pi's fork gives (up
to fresh label ids), a label directly before a compaction maps its
``firstKeptEntryId`` to the compaction itself (retain-none), and Pi 1.6.0 opening
the daemon's fork serves the context the daemon serves for it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.e2e.daemon_client import Daemons, call, daemons_fixture, read_lines
from tests.parity.oracle import PiOracle
from tests.parity.test_compaction_parity import _normalized_fork, script_labels_and_compactions

pytestmark = pytest.mark.parity
daemons = daemons_fixture


async def test_daemon_fork_matches_pi16_and_keeps_retain_none(pi16: PiOracle, daemons: Daemons,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "labels.jsonl"
    path.write_text(pi16.call("write", calls=script_labels_and_compactions())["fileText"], encoding="utf-8")
    entries = read_lines(path)[1:]
    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    retain_none = 0
    for entry in entries:
        forked = await call(client, "pi/fork", {"sessionId": sid, "entryId": entry["id"]})
        ours = read_lines(Path(forked["path"]))[1:]
        theirs = pi16.call("fork", file=str(path), leafId=entry["id"])["entries"]
        assert _normalized_fork(ours) == _normalized_fork(theirs), entry["id"]
        retain_none += sum(1 for e in ours if e["type"] == "compaction" and e["firstKeptEntryId"] == e["id"])
        context = await call(client, "pi/getContext", {"sessionId": forked["sessionId"]})
        pi_context = pi16.call("context", file=forked["path"])[0]
        assert json.dumps(context["messages"]) == json.dumps(pi_context["messages"]), entry["id"]
        await call(client, "pi/closeSession", {"sessionId": forked["sessionId"]})
    assert retain_none >= 2  # the hook-less label mapping produced retain-none compactions
    assert read_lines(path)[1:] == entries  # the source is untouched

"""``pi/mask`` / ``pi/unmask`` through the real daemon; Pi 1.6.0 reads the masked file as we do.

The masking edits are Pi 1.6.0 ``context_edit`` replacements, so Pi's own
``SessionManager`` opening the file must serve the masked context the daemon
serves, and after ``pi/unmask`` the original context again. The originals stay
in the file (``pi/getEntries`` returns them); a dry run writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import Daemons, call, daemons_fixture, generated, read_lines
from tests.parity.oracle import PiOracle

from pi_sessiond.compaction.masking import MARKER

pytestmark = pytest.mark.parity
daemons = daemons_fixture
MASKING = {"compaction": {"masking": {"minTokens": 200, "olderThanTokens": 2000}}}


def pi_messages(pi16: PiOracle, path: Path) -> str:
    return json.dumps(pi16.call("context", file=str(path))[0]["messages"])


async def context_of(client: Any, sid: str) -> str:
    return json.dumps((await call(client, "pi/getContext", {"sessionId": sid}))["messages"])


async def test_masked_context_is_the_one_pi_reads_and_unmask_restores_it(
        pi16: PiOracle, daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=300, seed=4)
    original_lines = read_lines(path)
    client = await daemons.start(MASKING)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    before = await context_of(client, sid)

    dry = await call(client, "pi/mask", {"sessionId": sid, "dryRun": True})
    assert dry["edits"] and dry["tokensAfter"] < dry["tokensBefore"]
    assert read_lines(path) == original_lines  # a dry run writes nothing

    done = await call(client, "pi/mask", {"sessionId": sid})
    targets = [e["targetId"] for e in done["edits"]]
    assert targets == [e["targetId"] for e in dry["edits"]] and done["tokensAfter"] == dry["tokensAfter"]
    lines = read_lines(path)
    assert lines[: len(original_lines)] == original_lines and len(lines) == len(original_lines) + len(targets)
    masked = await context_of(client, sid)
    assert masked == pi_messages(pi16, path) and masked != before and MARKER in masked
    stats = await call(client, "pi/getStats", {"sessionId": sid})
    assert stats["estimatedContextTokens"] == done["tokensAfter"]
    originals = await call(client, "pi/getEntries", {"sessionId": sid, "ids": targets})
    assert all(MARKER not in json.dumps(e) for e in originals["entries"])  # the raw history keeps them

    again = await call(client, "pi/mask", {"sessionId": sid})
    assert again["edits"] == []  # what is masked is not masked twice

    restored = await call(client, "pi/unmask", {"sessionId": sid, "entryIds": targets})
    assert len(restored["edits"]) == len(targets)
    assert await context_of(client, sid) == before == pi_messages(pi16, path)


async def test_bad_entry_ids_are_refused_and_nothing_is_written(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=120, seed=2)
    lines = read_lines(path)
    client = await daemons.start(MASKING)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    user = next(e for e in lines[1:] if e.get("message", {}).get("role") == "user")
    cases = [("pi/mask", {"entryIds": ["nope"]}, -32002), ("pi/mask", {"entryIds": [user["id"]]}, -32602),
             ("pi/unmask", {"entryIds": [user["id"]]}, -32602)]
    for method, params, code in cases:
        with pytest.raises(JsonRpcException) as info:
            await call(client, method, {"sessionId": sid, **params})
        assert info.value.code == code, (method, params)
    assert read_lines(path) == lines

"""Bounded work on the wire: batch items and the batch's total reply size are capped.

Sizes are larger than the ones that broke the daemon (a batch of a few megabytes);
full-size floods are in ``tests/soak/test_wire_floods.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_transport import Raw, req


@pytest.fixture
def raw() -> Any:
    server = Raw()
    yield server
    server.stop()


def initialize(raw: Raw, daemon: dict[str, Any]) -> None:
    reply = raw.call(0, "initialize", {"processId": None, "capabilities": {},
                                       "initializationOptions": {"settings": {"daemon": daemon}}})
    assert "result" in reply, reply


def test_a_batch_above_max_batch_items_is_one_too_large_error_and_nothing_runs(raw: Raw) -> None:
    initialize(raw, {})
    raw.send([req(i, "debug/tick" if i % 2 else "debug/echo", {"i": i}) for i in range(20_000)])
    reply = raw.recv()
    assert isinstance(reply, dict) and reply["id"] is None
    assert reply["error"]["code"] == -32008 and reply["error"]["data"]["reason"] == "tooLarge"
    assert reply["error"]["data"]["items"] == 20_000 and reply["error"]["data"]["limit"] == 1000
    assert "daemon.maxBatchItems" in reply["error"]["message"]
    raw.ping()  # the next reply is the ping's: no item of the refused batch was answered
    raw.send([req(i, "debug/echo", {"i": i}) for i in range(1000)])  # at the cap: served
    assert len(raw.recv()) == 1000


def test_max_batch_items_follows_the_settings(raw: Raw) -> None:
    initialize(raw, {"maxBatchItems": 3})
    raw.send([req(i, "debug/echo", {}) for i in range(4)])
    assert raw.recv()["error"]["data"]["limit"] == 3
    raw.send([req(i, "debug/echo", {}) for i in range(3)])
    assert [r["id"] for r in sorted(raw.recv(), key=lambda r: r["id"])] == [0, 1, 2]


def test_the_replies_of_a_batch_stay_under_max_message_bytes(raw: Raw, real_session: Path, tmp_path: Path) -> None:
    cap = 2 * 1024 * 1024
    initialize(raw, {"maxMessageBytes": cap})
    path = tmp_path / "s.jsonl"
    shutil.copy(real_session, path)
    sid = raw.call(1, "pi/openSession", {"path": str(path)})["result"]["sessionId"]
    one = raw.call(2, "pi/getContext", {"sessionId": sid})
    assert "result" in one
    size = len(str(one))
    count = 3 * cap // size + 5  # enough getContext replies to pass the cap three times over
    raw.send([req(100 + i, "pi/getContext", {"sessionId": sid}) for i in range(count)])
    replies = raw.recv(timeout=300)
    assert sorted(r["id"] for r in replies) == [100 + i for i in range(count)]  # every item answered
    served = [r for r in replies if "result" in r]
    refused = [r for r in replies if "error" in r]
    assert served and refused and all(r["error"]["code"] == -32008 for r in refused)
    assert "daemon.maxMessageBytes" in refused[0]["error"]["message"]
    assert len(served) * size <= cap * 1.1
    raw.ping()

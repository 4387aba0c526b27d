"""Every error the real daemon answers carries ``data.reason``; the lifecycle rules of LSP hold.

Each kind of bad request is sent as raw bytes to the daemon subprocess and its
answer checked: code, ``data.reason``, the id it is answered with. Errors the
client has been answered are not repeated as log lines on stderr.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from tests.e2e.test_transport import Raw, frame, req

INIT = {"processId": None, "capabilities": {}}


def error(reply: dict[str, Any]) -> tuple[Any, int, str]:
    return reply["id"], reply["error"]["code"], reply["error"]["data"]["reason"]


@pytest.fixture
def raw() -> Any:
    server = Raw().init()
    yield server
    server.stop()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"Content-Length: 9\r\n\r\n{not json", (None, -32700, "parseError")),
        (frame([]), (None, -32600, "invalidRequest")),
        (frame({"jsonrpc": "1.0", "id": 3, "method": "debug/echo"}), (3, -32600, "invalidRequest")),
        (frame(req(4, "pi/nope")), (4, -32601, "methodNotFound")),
        (frame(req(5, "debug/typed", {"sessionId": 5})), (5, -32602, "invalidParams")),
        (frame(req(6, "initialize", INIT)), (6, -32600, "invalidRequest")),
    ],
    ids=["parse", "empty-batch", "jsonrpc-1.0", "unknown-method", "bad-params", "second-initialize"],
)
def test_each_bad_request_is_answered_with_its_reason(raw: Raw, data: bytes, expected: tuple[Any, int, str]) -> None:
    raw.send(data)
    assert error(raw.recv()) == expected
    raw.ping()  # still serving
    raw.close_stdin()
    assert raw.wait(timeout=20) == 0
    assert raw.log() == ""  # answered: nothing more to say on stderr


def test_a_cancelled_request_says_cancelled(raw: Raw) -> None:
    raw.send(req("slow", "debug/slow", {"steps": 400, "delay": 0.05}))
    time.sleep(0.3)
    raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "slow"}})
    assert error(raw.recv()) == ("slow", -32800, "cancelled")


def test_a_broken_frame_is_answered_before_the_connection_closes(raw: Raw) -> None:
    raw.send(b"this is not a header\r\n\r\n")
    reply = raw.recv()
    assert error(reply) == (None, -32700, "parseError") and "closing the connection" in reply["error"]["message"]
    assert raw.wait(timeout=20) == 1


def test_requests_before_initialize_are_32002_and_notifications_are_dropped() -> None:
    server = Raw()
    try:
        assert error(server.call(1, "debug/echo", {"a": 1})) == (1, -32002, "notInitialized")
        assert error(server.call(2, "shutdown")) == (2, -32002, "notInitialized")
        server.send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {}}})
        server.init()
        server.ping()
        assert error(server.call(3, "initialize", INIT)) == (3, -32600, "invalidRequest")
    finally:
        server.stop()


def test_an_initialize_still_running_refuses_a_second_one_in_the_same_batch() -> None:
    server = Raw()
    try:
        server.send([req(1, "initialize", INIT), req(2, "initialize", INIT)])
        replies = {r["id"]: r for r in server.recv()}
        assert "result" in replies[1] and error(replies[2]) == (2, -32600, "invalidRequest")
        server.ping()
    finally:
        server.stop()


def test_a_configuration_change_it_refuses_is_said_in_the_client_s_log_and_changes_nothing(raw: Raw) -> None:
    """A notification has no reply: the refusal goes to ``window/logMessage``, one line to stderr, no traceback;
    neither the settings nor the framing limit change (found by ``wire_fuzz --seed 7``)."""
    raw.send(req(1, "pi/getSettings", {}))
    before = raw.recv()["result"]["settings"]
    bad = {"models": [[1, False]], "daemon": {"maxMessageBytes": 2048}, "compaction": {"keepRecentTokens": 7}}
    raw.send({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration", "params": {"settings": {"pi": bad}}})
    logged = raw.recv()
    assert logged["method"] == "window/logMessage" and logged["params"]["type"] == 1
    message = logged["params"]["message"]
    assert "workspace/didChangeConfiguration refused" in message and "settings.models" in message
    raw.send(req(2, "pi/getSettings", {}))
    assert raw.recv()["result"]["settings"] == before
    raw.send(req(3, "debug/echo", {"text": "x" * 4096}))  # above the refused 2048-byte limit
    echoed = raw.recv()
    assert echoed["id"] == 3 and "result" in echoed, echoed
    raw.close_stdin()
    assert raw.wait(timeout=20) == 0
    assert "Traceback" not in raw.log() and "settings.models" in raw.log()

"""Raw bytes against the real daemon subprocess: framing, error replies, limits, leaks, exit codes.

One row per case where stock pygls 2.1.1 drops,
desynchronises or crashes, each followed by a good request to show the daemon
keeps serving — or, for a frame no framing can recover from, that it stops at
once with exit code 1. The ``debug/*`` methods come from
``PI_SESSIOND_DEBUG_METHODS=1``.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

DEBUG_ENV = {"PI_SESSIOND_DEBUG_METHODS": "1"}


def serve_command() -> list[str]:
    """``python -m pi_sessiond serve``."""
    return [sys.executable, "-m", "pi_sessiond", "serve"]


def frame(obj: Any) -> bytes:
    body = json.dumps(obj, ensure_ascii=False).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def req(msg_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "id": msg_id, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


class Raw:
    """The daemon as a subprocess, with a strict frame parser on its stdout."""

    def __init__(self, *args: str) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        env = {**os.environ, **DEBUG_ENV}
        self.proc = subprocess.Popen(
            [*serve_command(), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, env=env
        )
        self.replies: queue.Queue[Any] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = out.readline()
            if not header:
                self.replies.put(EOFError())
                return
            assert header.startswith(b"Content-Length: "), header
            length = int(header.split(b":")[1])
            assert out.readline() == b"\r\n"
            body = out.read(length)
            assert len(body) == length
            self.replies.put(json.loads(body.decode("utf-8")))  # the length is in bytes, exactly

    def send(self, data: bytes | dict[str, Any] | list[Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data if isinstance(data, bytes) else frame(data))
        self.proc.stdin.flush()

    def recv(self, timeout: float = 60.0) -> Any:
        reply = self.replies.get(timeout=timeout)
        if isinstance(reply, EOFError):
            raise reply
        return reply

    def call(self, msg_id: Any, method: str, params: Any = None) -> Any:
        self.send(req(msg_id, method, params))
        return self.recv()

    def init(self) -> Raw:
        """Send ``initialize`` and wait for its result (other requests are refused before it)."""
        assert "result" in self.call("init", "initialize", {"processId": None, "capabilities": {}})
        return self

    def ping(self, msg_id: Any = "ping") -> None:
        assert self.call(msg_id, "debug/echo", {"ok": 1}) == {"jsonrpc": "2.0", "id": msg_id, "result": {"ok": 1}}

    def status(self, key: str) -> int:
        with open(f"/proc/{self.proc.pid}/status") as f:
            line = next(line for line in f if line.startswith(key + ":"))
        return int(line.split()[1])

    def close_stdin(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()

    def wait(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout=timeout)

    def log(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


@pytest.fixture
def raw() -> Any:
    """An initialized daemon."""
    server = Raw().init()
    yield server
    server.stop()


@pytest.fixture
def fresh() -> Any:
    """A daemon that has not seen ``initialize``."""
    server = Raw()
    yield server
    server.stop()


def error_of(reply: dict[str, Any]) -> tuple[Any, int]:
    return reply["id"], reply["error"]["code"]


# ------------------------------------------------------------------ headers


@pytest.mark.parametrize(
    "header",
    [
        b"content-length: %d\r\n\r\n",
        b"CONTENT-LENGTH: %d\r\n\r\n",
        b"Content-Length: %d\n\n",
        b"Content-Length:%d\r\n\r\n",
        b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: %d\r\n\r\n",
        b"Content-Length: %d\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
        b"\r\nContent-Length: %d\r\n\r\n",
    ],
    ids=["lowercase", "uppercase", "lf-only", "no-space", "content-type-first", "content-type-last", "blank-line"],
)
def test_header_variants_are_accepted_and_later_messages_still_served(raw: Raw, header: bytes) -> None:
    body = json.dumps(req(1, "debug/echo", {"a": 1})).encode()
    raw.send(header % len(body) + body)
    assert raw.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"a": 1}}
    raw.ping()


def test_utf8_body_counted_in_bytes_round_trips_with_a_byte_accurate_reply_length(raw: Raw) -> None:
    text = "héllo ✓ 😀"
    assert raw.call(1, "debug/echo", {"t": text})["result"] == {"t": text}  # the reader checks the lengths


def test_content_length_zero_is_a_parse_error_and_serving_goes_on(raw: Raw) -> None:
    raw.send(b"Content-Length: 0\r\n\r\n")
    assert error_of(raw.recv()) == (None, -32700)
    raw.ping()


# ------------------------------------------------------------------ bodies


@pytest.mark.parametrize(
    "body", [b'{"jsonrpc": "2.0", "id": 1,', b"not json at all", b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}']
)
def test_malformed_json_and_invalid_utf8_get_parse_error_with_null_id(raw: Raw, body: bytes) -> None:
    raw.send(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    reply = raw.recv()
    assert error_of(reply) == (None, -32700) and reply["error"]["message"].startswith("Parse error")
    raw.ping()


@pytest.mark.parametrize(
    ("message", "expected_id"),
    [
        ([1, 2][0], None),
        ({"jsonrpc": "1.0", "id": 7, "method": "debug/echo"}, 7),
        ({"id": 8, "method": "debug/echo"}, 8),
        ({"jsonrpc": "2.0", "id": 9, "method": 5}, 9),
        ({"jsonrpc": "2.0", "id": {"x": 1}, "method": "debug/echo"}, None),
        ({"jsonrpc": "2.0", "id": 10, "method": "debug/echo", "params": 3}, 10),
        ({"jsonrpc": "2.0", "id": 11}, 11),
    ],
    ids=["not-an-object", "jsonrpc-1.0", "no-jsonrpc", "method-not-string", "bad-id", "scalar-params", "no-method"],
)
def test_invalid_requests_get_32600_with_their_id(raw: Raw, message: Any, expected_id: Any) -> None:
    raw.send(message)
    assert error_of(raw.recv()) == (expected_id, -32600)
    raw.ping()


def test_request_without_params_and_with_extra_members_is_answered(raw: Raw) -> None:
    assert raw.call(1, "debug/echo") == {"jsonrpc": "2.0", "id": 1, "result": None}
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "debug/echo", "params": {"b": 2}, "extra": True, "meta": {}})
    assert raw.recv()["result"] == {"b": 2}


def test_params_stay_plain_json(raw: Raw) -> None:
    params = {"class": 2, "type_name": "Foo", "nested": {"jsonrpc": "2.0", "method": "x"}, "list": [{"k": 1}]}
    assert raw.call(1, "debug/echo", params)["result"] == params


def test_request_with_null_id_is_answered_with_null_id(raw: Raw) -> None:
    assert raw.call(None, "debug/echo", {"n": 1}) == {"jsonrpc": "2.0", "id": None, "result": {"n": 1}}


def test_unknown_method_gets_32601_and_unknown_notification_is_ignored(raw: Raw) -> None:
    assert error_of(raw.call(1, "no/such")) == (1, -32601)
    raw.send({"jsonrpc": "2.0", "method": "no/suchNotification", "params": {}})
    raw.ping()


# ------------------------------------------------------------------ batches


def test_batch_replies_are_collected_in_one_array(raw: Raw) -> None:
    raw.send(
        [
            req(1, "debug/echo", {"i": 1}),
            {"jsonrpc": "2.0", "method": "debug/tick"},
            5,
            req(2, "debug/slow", {"steps": 1, "delay": 0.05}),
            req(3, "no/such"),
        ]
    )
    replies = raw.recv()
    assert isinstance(replies, list)
    by_id = {r["id"]: r for r in replies}
    assert len(replies) == 4
    assert by_id[1]["result"] == {"i": 1}
    assert by_id[None]["error"]["code"] == -32600
    assert by_id[2]["result"]["steps"] == 1
    assert by_id[3]["error"]["code"] == -32601


def test_empty_batch_is_one_invalid_request_and_notification_batch_gets_no_reply(raw: Raw) -> None:
    raw.send([])
    assert error_of(raw.recv()) == (None, -32600)
    raw.send(
        [
            {"jsonrpc": "2.0", "method": "debug/tick"},
            {"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}},
        ]
    )
    raw.ping()  # the next reply is the ping's, so the batch produced none


# ------------------------------------------------------------------ errors from handlers


def test_unexpected_exception_is_32603_without_traceback(raw: Raw) -> None:
    reply = raw.call(1, "debug/fail")
    assert reply["error"] == {"code": -32603, "message": "Internal error: ValueError", "data": {"reason": "internal"}}
    assert "secret" not in json.dumps(reply)
    raw.ping()


@pytest.mark.parametrize(
    ("reason", "code"), [("busy", -32007), ("unknownSession", -32001), ("cancelled", -32800), ("invalidParams", -32602)]
)
def test_service_errors_map_to_their_codes_with_reason(raw: Raw, reason: str, code: int) -> None:
    reply = raw.call(1, "debug/fail", {"reason": reason, "message": "nope"})
    assert reply["error"] == {"code": code, "message": "nope", "data": {"reason": reason, "detail": 1}}


@pytest.mark.parametrize(
    ("params", "field"), [({}, "sessionId"), (None, "sessionId"), ({"sessionId": "s", "leafId": 5}, "leafId")]
)
def test_invalid_params_name_the_field(raw: Raw, params: Any, field: str) -> None:
    reply = raw.call(1, "debug/typed", params)
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"] == {"reason": "invalidParams", "field": field}
    assert field in reply["error"]["message"]
    typed = {"sessionId": "s", "format": "pi", "waitForCompaction": False, "unknown": 1}  # with the defaults
    assert raw.call(2, "debug/typed", {"sessionId": "s", "unknown": 1})["result"] == typed


def test_invalid_initialization_options_are_32602_naming_the_field(fresh: Raw) -> None:
    params = {"processId": None, "capabilities": {}, "initializationOptions": {"settings": 5}}
    reply = fresh.call(1, "initialize", params)
    assert reply["error"]["code"] == -32602
    assert reply["error"]["data"]["field"] == "initializationOptions.settings"


@pytest.mark.parametrize("options", [[], {"settings": []}, None], ids=["empty-array", "settings-empty-array", "null"])
def test_lua_s_empty_tables_are_no_options(options: object) -> None:
    """Neovim encodes an empty Lua table as ``[]``: ``setup({})`` must start the daemon."""
    server = Raw()
    try:
        params = {"processId": None, "capabilities": {}, "initializationOptions": options}
        assert "result" in server.call(1, "initialize", params)
        server.ping()
    finally:
        server.stop()


def test_options_that_are_no_object_are_refused_naming_initialization_options(fresh: Raw) -> None:
    reply = fresh.call(1, "initialize", {"processId": None, "capabilities": {}, "initializationOptions": [1]})
    assert reply["error"]["message"] == "Invalid params: initializationOptions: expected object, got array"
    assert reply["error"]["data"] == {"reason": "invalidParams", "field": "initializationOptions"}


def test_initialize_with_bad_lsp_params_is_32602_and_may_be_sent_again(fresh: Raw) -> None:
    assert error_of(fresh.call(1, "initialize", {"capabilities": 3})) == (1, -32602)
    fresh.init()
    fresh.ping()


# ------------------------------------------------------------------ size limit


def test_message_over_the_configured_limit_is_skipped_and_answered_too_large(fresh: Raw) -> None:
    options = {"settings": {"daemon": {"maxMessageBytes": 1000}}}
    assert "result" in fresh.call(
        0, "initialize", {"processId": None, "capabilities": {}, "initializationOptions": options}
    )
    big = frame(req("big", "debug/echo", {"x": "y" * 5000}))
    fresh.send(big)
    reply = fresh.recv()
    assert error_of(reply) == ("big", -32008)
    assert reply["error"]["data"] == {"reason": "tooLarge", "size": len(big.split(b"\r\n\r\n", 1)[1]), "limit": 1000}
    no_id_first = b'{"params": {"x": "' + b"y" * 4982 + b'"}, "id": 3}'
    fresh.send(b"Content-Length: %d\r\n\r\n%b" % (len(no_id_first), no_id_first))
    assert error_of(fresh.recv()) == (None, -32008)  # the id cannot be seen before params
    fresh.ping()


def test_the_global_settings_limit_is_enforced_and_follows_changes(isolated_agent_dir: Path) -> None:
    (isolated_agent_dir / "settings.json").write_text(json.dumps({"daemon": {"maxMessageBytes": 1000}}))
    server = Raw()  # started after the file was written, with PI_CODING_AGENT_DIR pointing at it
    try:
        init = server.call(0, "initialize", {"processId": None, "capabilities": {}})
        assert init["result"]["capabilities"]["experimental"]["pi"]["maxMessageBytes"] == 1000
        big = frame(req("big", "debug/echo", {"x": "y" * 5000}))
        server.send(big)
        reply = server.recv()
        assert error_of(reply) == ("big", -32008) and reply["error"]["data"]["limit"] == 1000
        raised = server.call(1, "pi/updateSettings", {"settings": {"daemon": {"maxMessageBytes": 100000}}})
        assert raised["result"]["settings"]["daemon"]["maxMessageBytes"] == 100000
        server.send(big)
        assert server.recv()["result"] == {"x": "y" * 5000}
        settings = server.call(2, "pi/getSettings", {})["result"]
        assert settings["sources"]["daemon.maxMessageBytes"] == "initialize" and settings["errors"] == []
    finally:
        server.stop()


def test_default_limit_skips_65_mib_without_holding_it_in_memory(raw: Raw) -> None:
    raw.ping()
    baseline = raw.status("VmRSS")
    body = b'{"jsonrpc":"2.0","id":"huge","method":"debug/echo","params":{"x":"' + b"a" * (65 << 20) + b'"}}'
    raw.send(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
    assert error_of(raw.recv(timeout=30)) == ("huge", -32008)
    raw.ping()
    assert raw.status("VmHWM") - baseline < 16 << 10, "the body was buffered"


def test_absurd_content_length_is_discarded_as_it_streams_and_eof_then_fails_fast(raw: Raw) -> None:
    raw.ping()
    raw.send(b"Content-Length: 100000000000\r\n\r\n" + b"x" * (8 << 20))
    time.sleep(0.3)
    assert raw.proc.poll() is None and raw.status("VmHWM") < 200 << 10
    raw.close_stdin()
    assert raw.wait() == 1
    assert "oversized body" in raw.log()


# ------------------------------------------------------------------ unrecoverable frames


@pytest.mark.parametrize(
    "junk",
    [
        b"Content-Type: text/plain\r\n\r\n{}",
        b"Content-Length: twelve\r\n\r\n{}",
        b"Content-Length: -5\r\n\r\n{}",
        b"this is not a header\r\n\r\n",
    ],
    ids=["no-content-length", "non-numeric", "negative", "garbage-line"],
)
def test_unrecoverable_framing_stops_the_connection_with_exit_1(raw: Raw, junk: bytes) -> None:
    raw.ping()
    raw.send(junk + frame(req(2, "debug/echo")))
    assert raw.wait() == 1
    assert "unrecoverable framing error" in raw.log()


def test_content_length_too_small_fails_fast_instead_of_desynchronising(raw: Raw) -> None:
    body = json.dumps(req(1, "debug/echo", {"t": "héllo ✓ 😀"}), ensure_ascii=False).encode()
    chars = len(body.decode())  # a client counting characters, not bytes
    raw.send(b"Content-Length: %d\r\n\r\n%b" % (chars, body) + frame(req(2, "debug/echo")))
    assert error_of(raw.recv()) == (None, -32700)
    last = raw.recv()  # the rest cannot be framed: answered once, then the connection closes
    assert error_of(last) == (None, -32700) and "closing the connection" in last["error"]["message"]
    assert raw.wait() == 1
    with pytest.raises(EOFError):
        raw.recv(timeout=1)


# ------------------------------------------------------------------ leaks


def test_ten_thousand_notifications_leave_the_tables_flat(fresh: Raw) -> None:
    fresh.call(0, "initialize", {"processId": None, "capabilities": {}})
    fresh.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})

    def burst() -> dict[str, Any]:
        """Send the burst, then read the tables until the notifications' tasks have all ended."""
        tick = frame({"jsonrpc": "2.0", "method": "debug/tick"})
        trace = frame({"jsonrpc": "2.0", "method": "$/setTrace", "params": {"value": "off"}})
        fresh.send((tick + trace) * 5000)
        deadline = time.monotonic() + 60  # generous: a loaded machine drains 10k notifications slowly
        while True:
            result: dict[str, Any] = fresh.call("stats", "debug/stats")["result"]
            if result["tasks"] <= 3 or time.monotonic() > deadline:
                return result
            time.sleep(0.05)

    first, second = burst(), burst()
    for stats in (first, second):
        assert stats["requestFutures"] == 0 and stats["resultTypes"] == 0 and stats["progressTokens"] == 0
    assert second["tasks"] <= first["tasks"] <= 3
    assert second["rssKiB"] - first["rssKiB"] < 2048, (first, second)


# ------------------------------------------------------------------ lifecycle and exit codes


def test_shutdown_then_exit_is_exit_code_0_and_later_requests_are_refused(fresh: Raw) -> None:
    fresh.call(0, "initialize", {"processId": None, "capabilities": {}})
    assert fresh.call(1, "shutdown") == {"jsonrpc": "2.0", "id": 1, "result": None}
    assert error_of(fresh.call(2, "debug/echo")) == (2, -32600)
    fresh.send({"jsonrpc": "2.0", "method": "exit"})
    assert fresh.wait() == 0


def test_exit_without_shutdown_is_exit_code_1(fresh: Raw) -> None:
    fresh.call(0, "initialize", {"processId": None, "capabilities": {}})
    fresh.send({"jsonrpc": "2.0", "method": "exit"})
    assert fresh.wait() == 1


def test_eof_is_a_clean_end(raw: Raw) -> None:
    raw.ping()
    raw.close_stdin()
    assert raw.wait() == 0


def test_shutdown_cancels_in_flight_requests(raw: Raw) -> None:
    raw.send(req("slow", "debug/slow", {"steps": 100, "delay": 0.05}))
    time.sleep(0.1)
    raw.send(req("down", "shutdown"))
    replies = {r["id"]: r for r in (raw.recv(), raw.recv())}
    assert replies["slow"]["error"]["code"] == -32800
    assert replies["down"]["result"] is None


def test_nothing_but_protocol_on_stdout_and_logs_on_stderr(raw: Raw) -> None:
    raw.send(b"Content-Length: 3\r\n\r\n{x}")
    raw.recv()
    raw.ping()
    raw.close_stdin()
    assert raw.wait() == 0
    assert "Traceback" not in raw.log()


def test_requests_in_flight_are_bounded_with_a_clear_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_SESSIOND_MAX_IN_FLIGHT", "3")
    server = Raw().init()
    try:
        for i in range(3):
            server.send(req(f"slow-{i}", "debug/slow", {"steps": 20, "delay": 0.05}))
        server.send(req("extra", "debug/slow", {"steps": 1, "delay": 0.01}))
        reply = server.recv()
        assert reply["id"] == "extra" and reply["error"]["code"] == -32007
        assert reply["error"]["data"]["reason"] == "busy"
        done = {server.recv(timeout=20)["id"] for _ in range(3)}
        assert done == {"slow-0", "slow-1", "slow-2"}
        server.ping()  # the queue drained: served again
    finally:
        server.stop()


def test_stdout_redirected_to_a_regular_file_still_gets_every_reply(tmp_path: Path) -> None:
    out = tmp_path / "out.bin"
    exit_ = {"jsonrpc": "2.0", "method": "exit"}
    init = req(0, "initialize", {"processId": None, "capabilities": {}})
    data = frame(init) + frame(req(1, "debug/echo", {"a": 1})) + frame(req(2, "shutdown")) + frame(exit_)
    with open(out, "wb") as fh:
        done = subprocess.run(serve_command(), input=data, stdout=fh, stderr=subprocess.PIPE, timeout=30,
                              env={**os.environ, **DEBUG_ENV})
    assert done.returncode == 0, done.stderr
    text = out.read_bytes()
    assert b'"id":1,"result":{"a":1}' in text and b'"id":2,"result":null' in text


def test_work_in_flight_at_end_of_input_finishes_and_is_answered(tmp_path: Path) -> None:
    """``printf FRAMES | pi-sessiond serve`` can compact: EOF gives in-flight requests time to finish."""
    from pi_sessiond.examples import example_path

    session = tmp_path / "example.jsonl"
    session.write_bytes(example_path().read_bytes())
    session_id = json.loads(session.read_text().splitlines()[0])["id"]
    options = {"settings": {"compaction": {"keepRecentTokens": 6000}}}
    frames = [
        req(0, "initialize", {"processId": None, "capabilities": {}, "initializationOptions": options}),
        req(1, "pi/openSession", {"path": str(session)}),
        req(2, "debug/slow", {"steps": 10, "delay": 0.05}),
        req(3, "pi/compact", {"sessionId": session_id}),
    ]
    done = subprocess.run(serve_command(), input=b"".join(frame(f) for f in frames), capture_output=True,
                          timeout=120, env={**os.environ, **DEBUG_ENV})
    assert done.returncode == 0, done.stderr
    assert b'"id":2,"result":{"steps":10' in done.stdout  # answered, not cancelled (-32800)
    assert b'"id":3,"result":{"entry":{"type":"compaction"' in done.stdout, done.stdout[-2000:]
    assert json.loads(session.read_text().splitlines()[-1])["type"] == "compaction"

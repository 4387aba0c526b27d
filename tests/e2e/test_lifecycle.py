"""The LSP lifecycle through a real LSP client (pytest-lsp) and TCP mode with raw sockets.

Hang traps avoided: requests that must be cancelled are sent
with ``protocol.send_request`` (sent at once), notifications are awaited with
``protocol.wait_for_notification_async`` registered before the trigger, and
fixtures are function-scoped. Every wait has a deadline.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import tempfile
import time
import warnings
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient, LspSpecificationWarning
from pytest_lsp.client import register_lsp_features
from tests.e2e.test_transport import DEBUG_ENV, serve_command

from pi_sessiond.rpc.converter import raw_converter
from pi_sessiond.wire.auth import read_secret

# Built at import, before tests/conftest.py's autouse fixture runs: give these daemons an
# empty agent dir and a cache folder of their own so a developer's ~/.pi/agent never leaks in
# and their ~/.cache is never written.
ENV = {**os.environ, **DEBUG_ENV, "PI_CODING_AGENT_DIR": tempfile.mkdtemp(prefix="pi-sessiond-agent-"),
       "XDG_CACHE_HOME": tempfile.mkdtemp(prefix="pi-sessiond-cache-")}
TIMEOUT = 60.0


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=raw_converter)
    register_lsp_features(client)
    client.hook_answers: list[Any] = []  # type: ignore[attr-defined]

    @client.feature("pi/beforeCompact")
    async def before_compact(params: Any) -> Any:
        client.hook_answers.append(params)  # type: ignore[attr-defined]
        if params.get("hang"):
            await asyncio.sleep(0.5)  # answers after the server gave up
        return {"cancel": True}

    return client


def capabilities(progress: bool = True, hooks: list[str] | None = None) -> types.ClientCapabilities:
    return types.ClientCapabilities(
        window=types.WindowClientCapabilities(work_done_progress=progress),
        experimental={"pi": {"hooks": hooks if hooks is not None else ["beforeCompact"]}},
    )


CONFIG = ClientServerConfig(server_command=serve_command(), client_factory=make_client, server_env=ENV)


@pytest_lsp.fixture(config=CONFIG)
async def client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    result = await lsp_client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities(),
            initialization_options={"settings": {"compaction": {"reserveTokens": 1000}}},
        )
    )
    lsp_client.init_result = result  # type: ignore[attr-defined]
    yield
    if not lsp_client.stopped:
        await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=CONFIG)
async def quiet_client(lsp_client: LanguageClient) -> AsyncIterator[None]:
    """A client that declares neither progress nor hooks."""
    await lsp_client.initialize_session(types.InitializeParams(capabilities=capabilities(progress=False, hooks=[])))
    yield
    await lsp_client.shutdown_session()


async def call(client: LanguageClient, method: str, params: Any = None) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), TIMEOUT)


def kinds(client: LanguageClient, token: Any) -> list[str]:
    return [type(v).__name__.removeprefix("WorkDoneProgress") for v in client.progress_reports[token]]


# ------------------------------------------------------------------ initialize / shutdown / exit


async def test_initialize_answers_server_info_and_pi_capabilities(client: LanguageClient) -> None:
    result = client.init_result  # type: ignore[attr-defined]
    assert result.server_info.name == "pi-sessiond"
    pi = result.capabilities.experimental["pi"]
    assert pi["hooks"] == ["beforeCompact", "beforeTree", "reviewSummary"]
    assert isinstance(pi["methods"], list) and pi["maxMessageBytes"] == 64 * 1024 * 1024
    configured = await call(client, "debug/configuration")
    assert configured[0] == ["configure", {"settings": {"compaction": {"reserveTokens": 1000}}}]


async def test_shutdown_and_exit_end_the_process_with_code_0(client: LanguageClient) -> None:
    await client.shutdown_session()
    assert client._server is not None and client._server.returncode == 0


async def test_did_change_configuration_reaches_the_daemon(client: LanguageClient) -> None:
    settings = {"compaction": {"keepRecentTokens": 1234}}
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"pi": settings}))
    configured = await call(client, "debug/configuration")
    assert configured[-1] == ["update_configuration", settings]
    if "pi/getSettings" in client.init_result.capabilities.experimental["pi"]["methods"]:  # type: ignore[attr-defined]
        answer = await call(client, "pi/getSettings", {})
        assert answer["settings"]["compaction"]["keepRecentTokens"] == 1234


async def test_set_trace_and_initialized_are_accepted(client: LanguageClient) -> None:
    client.set_trace(types.SetTraceParams(value=types.TraceValue.Verbose))
    stats = await call(client, "debug/stats")
    assert stats["requestFutures"] == 0


async def test_the_loop_watch_sees_the_loop_held(client: LanguageClient) -> None:
    await call(client, "debug/loopStall")  # starts watching
    ticks = 0
    for _ in range(200):  # a busy machine may delay the first ticks; give it seconds
        await asyncio.sleep(0.05)
        ticks += (await call(client, "debug/loopStall"))["ticks"]
        if ticks:
            break
    assert ticks > 0
    await call(client, "debug/block", {"seconds": 0.3})
    assert (await call(client, "debug/loopStall"))["longestMs"] >= 250


# ------------------------------------------------------------------ progress


async def test_server_created_progress_begin_report_end(client: LanguageClient) -> None:
    result = await call(client, "debug/slow", {"steps": 3, "delay": 0.01})
    token = result["token"]
    assert isinstance(token, str)
    assert kinds(client, token) == ["Begin", "Report", "Report", "Report", "End"]
    begin = client.progress_reports[token][0]
    assert begin.cancellable is True and begin.title == "debug/slow"
    assert (await call(client, "debug/stats"))["progressTokens"] == 0


async def test_client_token_is_used_and_no_create_is_sent(client: LanguageClient) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LspSpecificationWarning)
        result = await call(client, "debug/slow", {"steps": 2, "delay": 0.01, "workDoneToken": "client-1"})
    assert result["token"] == "client-1"
    assert kinds(client, "client-1") == ["Begin", "Report", "Report", "End"]


async def test_no_progress_and_no_create_when_the_client_did_not_declare_it(quiet_client: LanguageClient) -> None:
    result = await call(quiet_client, "debug/slow", {"steps": 2, "delay": 0.01})
    assert result["token"] is None and quiet_client.progress_reports == {}


# ------------------------------------------------------------------ cancellation

SLOW_STEPS = 3000  # a minute of debug/slow: it never ends by itself before the cancel


async def progress_begun(client: LanguageClient, timeout: float = 60.0) -> None:
    """Wait until a progress bar began (a loaded machine may take a while)."""
    deadline = time.monotonic() + timeout
    while not client.progress_reports:
        assert time.monotonic() < deadline, "no progress bar began"
        await asyncio.sleep(0.02)


async def test_cancel_request_answers_32800_and_ends_the_bar(client: LanguageClient) -> None:
    future = asyncio.wrap_future(
        client.protocol.send_request("debug/slow", {"steps": SLOW_STEPS, "delay": 0.02}, msg_id="slow-1")
    )
    await progress_begun(client)
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="slow-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(future, TIMEOUT)
    (token,) = client.progress_reports
    assert kinds(client, token)[-1] == "End" and client.progress_reports[token][-1].message == "cancelled"
    stats = await call(client, "debug/stats")
    assert stats["progressTokens"] == 0 and stats["requestFutures"] == 0


async def test_work_done_progress_cancel_cancels_the_task(client: LanguageClient) -> None:
    future = asyncio.wrap_future(client.protocol.send_request("debug/slow", {"steps": SLOW_STEPS, "delay": 0.02}))
    await progress_begun(client)
    (token,) = client.progress_reports
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=token))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(future, TIMEOUT)
    assert info.value.code == -32800
    assert len(client.progress_reports[token]) < SLOW_STEPS  # ended by the cancel, long before its last step
    assert (await call(client, "debug/stats"))["progressTokens"] == 0


# ------------------------------------------------------------------ events and hooks


async def test_events_arrive_as_notifications(client: LanguageClient) -> None:
    waiter = client.protocol.wait_for_notification_async("pi/sessionChanged")
    await call(client, "debug/notify", {"method": "pi/sessionChanged", "payload": {"sessionId": "s", "leafId": "x"}})
    assert await asyncio.wait_for(waiter, TIMEOUT) == {"sessionId": "s", "leafId": "x"}


async def test_declared_hook_is_asked_and_undeclared_is_not(client: LanguageClient) -> None:
    answer = await call(
        client, "debug/hook", {"hook": "beforeCompact", "method": "pi/beforeCompact", "payload": {"sessionId": "s"}}
    )
    assert answer == {"declared": True, "answer": {"cancel": True}}
    answer = await call(client, "debug/hook", {"hook": "beforeTree", "method": "pi/beforeTree", "payload": {}})
    assert answer == {"declared": False}


async def test_hook_timeout_frees_the_bookkeeping(client: LanguageClient) -> None:
    params = {"hook": "beforeCompact", "method": "pi/beforeCompact", "payload": {"hang": True}, "timeout": 0.2}
    with pytest.raises(JsonRpcException) as info:
        await call(client, "debug/hook", params)
    assert info.value.code == -32603
    stats = await call(client, "debug/stats")
    assert stats["requestFutures"] == 0 and stats["resultTypes"] == 0
    await asyncio.sleep(0.6)  # the late answer is logged and dropped (no InvalidStateError, pygls#621)
    assert (await call(client, "debug/stats"))["requestFutures"] == 0


# ------------------------------------------------------------------ TCP


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


async def read_message(reader: asyncio.StreamReader) -> Any:
    header = await reader.readuntil(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", header).group(1))  # type: ignore[union-attr]
    return json.loads(await reader.readexactly(length))


async def tcp_login(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection that sent ``initialize`` with the secret the same user's daemon keeps in its 0600 file."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    secret = read_secret(port)
    assert secret is not None
    options = {"secret": secret}
    writer.write(frame({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                        "params": {"capabilities": {}, "initializationOptions": options}}))
    assert "result" in await asyncio.wait_for(read_message(reader), TIMEOUT)
    return reader, writer


async def tcp_call(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, msg_id: Any, method: str) -> Any:
    writer.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": {"id": msg_id}}))
    await writer.drain()
    return await asyncio.wait_for(read_message(reader), TIMEOUT)


async def test_tcp_serves_concurrent_clients_independently_and_survives_disconnects() -> None:
    proc = await asyncio.create_subprocess_exec(
        *serve_command(), "--tcp", "127.0.0.1:0", env=ENV, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
        host, port = re.search(r"tcp://(.+):(\d+)", line).groups()  # type: ignore[union-attr]
        a = await tcp_login(int(port))
        b = await tcp_login(int(port))
        probe = await asyncio.open_connection(host, int(port))  # an "is the port open?" probe
        probe[1].close()
        assert (await tcp_call(*a, 1, "debug/echo"))["result"] == {"id": 1}
        assert (await tcp_call(*b, 1, "debug/echo"))["result"] == {"id": 1}
        a[1].write(frame({"jsonrpc": "2.0", "id": 2, "method": "debug/slow", "params": {"steps": 100}}))
        await a[1].drain()
        a[1].close()  # A leaves with a request in flight
        b[1].write(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        assert (await asyncio.wait_for(read_message(b[0]), TIMEOUT))["result"] is None
        c = await tcp_login(int(port))
        assert (await tcp_call(*c, "c", "debug/echo"))["result"] == {"id": "c"}
        assert (await tcp_call(*c, "s", "debug/stats"))["result"]["requestFutures"] == 0
        b[1].write(frame({"jsonrpc": "2.0", "method": "exit"}))
        await b[1].drain()
        assert await asyncio.wait_for(b[0].read(), TIMEOUT) == b""  # B's connection ends on exit
        assert (await tcp_call(*c, "c2", "debug/echo"))["result"] == {"id": "c2"}
        assert proc.returncode is None
    finally:
        proc.terminate()
        await proc.wait()


async def test_ws_mode_serves_json_rpc_over_websocket_messages() -> None:
    if os.environ.get("CI") == "true":
        import websockets.asyncio.client as websockets  # CI installs the dev extra: it must be there
    else:
        websockets = pytest.importorskip("websockets.asyncio.client")
    proc = await asyncio.create_subprocess_exec(
        *serve_command(), "--ws", "127.0.0.1:0", env=ENV, stderr=asyncio.subprocess.PIPE
    )
    try:
        assert proc.stderr is not None
        line = (await asyncio.wait_for(proc.stderr.readline(), TIMEOUT)).decode()
        url = line.strip().rsplit(" ", 1)[-1]
        assert url.startswith("ws://"), line
        async with websockets.connect(url) as ws:
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
            await ws.send(json.dumps(initialize))
            assert json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))["id"] == 1
            request = {"jsonrpc": "2.0", "id": 2, "method": "pi/estimateTokens", "params": {"text": "hello world"}}
            await ws.send(json.dumps(request))
            reply = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            assert reply == {"jsonrpc": "2.0", "id": 2, "result": {"tokens": 3, "estimator": "pi"}}
        assert proc.returncode is None  # a closed connection never stops the listener
    finally:
        proc.terminate()
        await proc.wait()


async def test_pi_methods_are_registered_and_reach_the_daemon(client: LanguageClient) -> None:
    advertised = client.init_result.capabilities.experimental["pi"]["methods"]  # type: ignore[attr-defined]
    if "pi/estimateTokens" not in advertised:
        pytest.skip("the pi/* handlers are not there yet")
    answer = await call(client, "pi/estimateTokens", {"text": "hello world"})
    assert answer["tokens"] > 0
    with pytest.raises(JsonRpcException) as info:
        await call(client, "pi/getContext", {})
    assert info.value.code == -32602 and info.value.data == {"reason": "invalidParams", "field": "sessionId"}

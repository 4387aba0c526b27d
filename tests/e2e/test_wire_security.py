"""Who may connect, tried as a local attacker would: the real daemon, real sockets.

Every attack is a test: a connection without the secret is answered ``-32014`` and
closed before anything runs; a foreign ``Origin`` never gets a WebSocket; a
network client cannot point the summarizer elsewhere or name the key's
variable; ``--tcp 0.0.0.0`` is refused; connection floods hit the cap and idle
connections are closed. The same user's clients (``call --connect``, the printed
WebSocket URL, ``serve --unix``) keep working with no extra flags.
"""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_sessiond.wire.auth import read_secret, secret_path

TIMEOUT = 60.0


def frame(obj: Any) -> bytes:
    body = json.dumps(obj).encode()
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def initialize(msg_id: Any = 0, **options: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "initialize",
            "params": {"capabilities": {}, "initializationOptions": options}}


class Conn:
    """A blocking LSP-framed socket client."""

    def __init__(self, sock: socket.socket) -> None:
        sock.settimeout(TIMEOUT)
        self.sock, self.file = sock, sock.makefile("rb")

    @classmethod
    def tcp(cls, port: int) -> Conn:
        return cls(socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT))

    def send(self, obj: Any) -> None:
        self.sock.sendall(frame(obj))

    def recv(self) -> Any:
        header = self.file.readline()
        if not header:
            raise EOFError
        length = int(header.split(b":")[1])
        self.file.readline()
        return json.loads(self.file.read(length))

    def call(self, obj: Any) -> Any:
        self.send(obj)
        return self.recv()

    def closed_by_peer(self) -> bool:
        try:
            return self.file.read(1) == b""
        except (ConnectionResetError, TimeoutError):
            return False

    def login(self, port: int) -> Conn:
        assert "result" in self.call(initialize(secret=read_secret(port)))
        return self

    def close(self) -> None:
        self.file.close()
        self.sock.close()


class Listener:
    """``pi-sessiond serve ARGS`` as a subprocess; the first stderr line is its address."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PI_SESSIOND_DEBUG_METHODS": "1"}
        self.proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "serve", *args],
                                     stderr=subprocess.PIPE, env=env)
        assert self.proc.stderr is not None
        self.line = self.proc.stderr.readline().decode()
        assert "listening on" in self.line, self.line + self.rest()
        match = re.search(r"://[^:]+:(\d+)", self.line)
        self.port = int(match.group(1)) if match else 0

    def rest(self) -> str:
        self.proc.kill()
        assert self.proc.stderr is not None
        return self.proc.stderr.read().decode(errors="replace")

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=TIMEOUT)


@pytest.fixture(autouse=True)
def runtime_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private ``$XDG_RUNTIME_DIR`` for the daemon and this test (short: Unix socket paths are limited)."""
    path = Path(os.path.realpath("/tmp")) / f"sw{os.getpid()}-{time.monotonic_ns() % 10**8}"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def tcp(isolated_agent_dir: Path) -> Iterator[Listener]:
    listener = Listener("--tcp", "127.0.0.1:0")
    yield listener
    listener.stop()


def global_settings(agent: Path, data: dict[str, Any]) -> None:
    (agent / "settings.json").write_text(json.dumps(data))


# ------------------------------------------------------------------ the secret


@pytest.mark.parametrize("first", [
    {"jsonrpc": "2.0", "id": 7, "method": "pi/openSession", "params": {"path": "/etc/shadow"}},
    {"jsonrpc": "2.0", "id": 7, "method": "pi/updateSettings", "params": {"settings": {"tokenizer": "cl100k"}}},
    initialize(7),
    initialize(7, secret="guess"),
    initialize(7, secret=""),
    [initialize(7)],
], ids=["openSession", "updateSettings", "no-secret", "wrong", "empty", "batch"])
def test_tcp_without_the_secret_is_unauthorized_and_closed(tcp: Listener, first: Any) -> None:
    conn = Conn.tcp(tcp.port)
    reply = conn.call(first)
    assert reply["error"]["code"] == -32014 and reply["error"]["data"] == {"reason": "unauthorized"}
    assert reply["id"] == (7 if isinstance(first, dict) else None)
    assert conn.closed_by_peer()
    assert tcp.proc.poll() is None  # the listener keeps serving the right clients
    conn = Conn.tcp(tcp.port).login(tcp.port)
    assert conn.call({"jsonrpc": "2.0", "id": 1, "method": "debug/echo", "params": {"ok": 1}})["result"] == {"ok": 1}


def test_the_secret_file_is_private_and_gone_after_the_daemon(runtime_dir: Path, isolated_agent_dir: Path) -> None:
    listener = Listener("--tcp", "127.0.0.1:0")
    path = secret_path(listener.port)
    assert str(path) in listener.line and path.parent == runtime_dir / "pi-sessiond"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert len(read_secret(listener.port) or "") >= 40
    assert read_secret(listener.port) not in listener.line  # a TCP address never shows the secret
    assert listener.stop() == 0
    assert not path.exists()


def test_the_launching_client_may_pass_the_secret(monkeypatch: pytest.MonkeyPatch, isolated_agent_dir: Path) -> None:
    monkeypatch.setenv("PI_SESSIOND_SECRET", "s3cret-from-the-launcher-0123456789")
    listener = Listener("--tcp", "127.0.0.1:0")
    try:
        conn = Conn.tcp(listener.port)
        assert "result" in conn.call(initialize(secret="s3cret-from-the-launcher-0123456789"))
    finally:
        listener.stop()


def test_call_connect_finds_the_secret_with_no_extra_flags(tcp: Listener) -> None:
    env = {k: v for k, v in os.environ.items() if k != "PI_SESSIOND_SECRET"}
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "call", "--connect", f"127.0.0.1:{tcp.port}",
                           "pi/estimateTokens", '{"text": "hello world"}'], capture_output=True, env=env,
                          timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["tokens"] == 3


def test_the_secret_never_reaches_the_daemon_layers(tcp: Listener) -> None:
    conn = Conn.tcp(tcp.port).login(tcp.port)
    logged = conn.call({"jsonrpc": "2.0", "id": 1, "method": "debug/configuration"})["result"]
    assert read_secret(tcp.port) not in json.dumps(logged)


# ------------------------------------------------------------------ addresses


@pytest.mark.parametrize("host", ["0.0.0.0", "[::]"])
def test_a_non_loopback_address_is_refused_without_allow_remote(host: str) -> None:
    for mode in ("--tcp", "--ws"):
        done = subprocess.run([sys.executable, "-m", "pi_sessiond", "serve", mode, f"{host}:0"],
                              capture_output=True, timeout=TIMEOUT)
        assert done.returncode == 2
        assert b"not a loopback address" in done.stderr and b"--allow-remote" in done.stderr


# ------------------------------------------------------------------ what a network client may set


def test_a_network_client_cannot_redirect_the_summarizer_or_name_the_key(
    tcp: Listener, isolated_agent_dir: Path
) -> None:
    for key, value in (("apiKeyEnv", "HOME"), ("baseUrl", "http://127.0.0.1:9/v1"), ("headers", {"x": "y"})):
        conn = Conn.tcp(tcp.port)
        wanted = {"summarizer": {"provider": "openai", key: value}}
        assert "result" in conn.call(initialize(secret=read_secret(tcp.port), settings=wanted))
        conn.send({"jsonrpc": "2.0", "id": 1, "method": "pi/getSettings", "params": {}})
        seen = [conn.recv() for _ in range(2)]  # the refusal is logged to the client, and nothing applied
        logged = next(m for m in seen if m.get("method") == "window/logMessage")["params"]["message"]
        assert f"summarizer.{key}" in logged and "security.allowWireApiKeyEnv" in logged
        shown = next(m for m in seen if m.get("id") == 1)["result"]["settings"]["summarizer"]
        assert shown["provider"] == "offline" and shown[key] in (None, {})
        update = {"jsonrpc": "2.0", "id": 2, "method": "pi/updateSettings",
                  "params": {"settings": {"summarizer": {"provider": "openai", key: value}}}}
        assert conn.call(update)["error"]["code"] == -32602
        got = conn.call({"jsonrpc": "2.0", "id": 3, "method": "pi/getSettings", "params": {}})["result"]
        assert got["settings"]["summarizer"]["provider"] == "offline"  # nothing of the refused update applied
    global_settings(isolated_agent_dir, {"security": {"allowWireApiKeyEnv": True}})
    conn = Conn.tcp(tcp.port).login(tcp.port)
    update = {"jsonrpc": "2.0", "id": 2, "method": "pi/updateSettings",
              "params": {"settings": {"summarizer": {"apiKeyEnv": "MY_KEY"}}}}
    assert conn.call(update)["result"]["settings"]["summarizer"]["apiKeyEnv"] == "MY_KEY"


# ------------------------------------------------------------------ floods and idle connections


def test_connections_above_the_cap_are_refused_and_freed_slots_serve_again(isolated_agent_dir: Path) -> None:
    global_settings(isolated_agent_dir, {"daemon": {"maxConnections": 8}})
    listener = Listener("--tcp", "127.0.0.1:0")
    try:
        held = [Conn.tcp(listener.port) for _ in range(8)]  # unauthenticated: they hold slots for a while
        for conn in held[:2]:
            conn.login(listener.port)
        flood = [Conn.tcp(listener.port) for _ in range(300)]
        refusals = [conn.recv() for conn in flood]
        assert {(r["error"]["code"], r["error"]["data"]["reason"]) for r in refusals} == {(-32007, "busy")}
        assert "daemon.maxConnections" in refusals[0]["error"]["message"]
        assert all(conn.closed_by_peer() for conn in flood)
        ping = {"jsonrpc": "2.0", "id": 1, "method": "debug/echo", "params": {}}
        assert held[0].call(ping)["result"] == {}  # the admitted ones still work
        for conn in [*held, *flood]:
            conn.close()
        deadline = time.monotonic() + TIMEOUT
        while True:  # the freed slots come back (the daemon sees the closes asynchronously)
            conn = Conn.tcp(listener.port)
            reply = conn.call(initialize(secret=read_secret(listener.port)))
            if "result" in reply or time.monotonic() > deadline:
                break
            conn.close()
        assert "result" in reply
    finally:
        listener.stop()


def test_idle_connections_are_closed_but_not_while_a_request_runs(isolated_agent_dir: Path) -> None:
    global_settings(isolated_agent_dir, {"daemon": {"idleConnectionSeconds": 0.5}})
    listener = Listener("--tcp", "127.0.0.1:0")
    try:
        idle = Conn.tcp(listener.port).login(listener.port)
        busy = Conn.tcp(listener.port).login(listener.port)
        busy.send({"jsonrpc": "2.0", "id": 1, "method": "debug/slow", "params": {"steps": 8, "delay": 0.25}})
        assert idle.closed_by_peer()
        assert busy.recv()["result"]["steps"] == 8  # 2 s of work outlived a 0.5 s idle timeout
        assert busy.closed_by_peer()  # then it was idle too
        silent = Conn.tcp(listener.port)  # never authenticates: closed like any idle connection
        assert silent.closed_by_peer()
    finally:
        listener.stop()


# ------------------------------------------------------------------ WebSocket


@pytest.fixture
def ws(isolated_agent_dir: Path) -> Iterator[Listener]:
    pytest.importorskip("websockets")
    listener = Listener("--ws", "127.0.0.1:0")
    yield listener
    listener.stop()


def ws_url(listener: Listener) -> str:
    return listener.line.strip().rsplit(" ", 1)[-1]


async def test_websocket_checks_the_origin_and_the_secret(ws: Listener) -> None:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus

    url = ws_url(ws)
    assert "?token=" in url
    bare = url.split("?")[0]
    with pytest.raises(InvalidStatus) as info:
        async with connect(url, origin="https://evil.example"):  # type: ignore[arg-type]
            pass
    assert info.value.response.status_code == 403
    async with connect(bare) as conn:  # no token: the first message must carry it
        await conn.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug/echo", "params": {}}))
        assert json.loads(await conn.recv())["error"]["code"] == -32014
        await conn.wait_closed()
    secret = url.split("token=")[1]
    async with connect(bare, additional_headers={"Authorization": f"Bearer {secret}"}) as conn:
        await conn.send(json.dumps(initialize(0)))
        assert "result" in json.loads(await conn.recv())
        await conn.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug/echo", "params": {"a": 1}}))
        assert json.loads(await conn.recv())["result"] == {"a": 1}
    async with connect(bare) as conn:
        await conn.send(json.dumps(initialize(1, secret=secret)))
        assert "result" in json.loads(await conn.recv())


async def test_an_allowed_origin_may_connect(isolated_agent_dir: Path) -> None:
    pytest.importorskip("websockets")
    from websockets.asyncio.client import connect

    listener = Listener("--ws", "127.0.0.1:0", "--allow-origin", "vscode-webview://pi")
    try:
        async with connect(ws_url(listener), origin="vscode-webview://pi") as conn:  # type: ignore[arg-type]
            await conn.send(json.dumps(initialize(0)))
            assert "result" in json.loads(await conn.recv())
            await conn.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "debug/echo", "params": {}}))
            assert json.loads(await conn.recv())["result"] == {}
    finally:
        listener.stop()


# ------------------------------------------------------------------ Unix socket


def test_unix_socket_is_private_and_serves_the_same_user(runtime_dir: Path, isolated_agent_dir: Path) -> None:
    listener = Listener("--unix")
    path = runtime_dir / "pi-sessiond" / "daemon.sock"
    try:
        assert str(path) in listener.line
        assert stat.S_ISSOCK(path.stat().st_mode) and stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        done = subprocess.run([sys.executable, "-m", "pi_sessiond", "call", "--connect", "unix:",
                               "pi/estimateTokens", '{"text": "hello world"}'], capture_output=True, timeout=TIMEOUT)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["tokens"] == 3
        second = subprocess.run([sys.executable, "-m", "pi_sessiond", "serve", "--unix"], capture_output=True,
                                timeout=TIMEOUT)
        assert second.returncode == 1 and b"another daemon is listening" in second.stderr
    finally:
        assert listener.stop() == 0
    assert not path.exists()


def test_a_stale_socket_is_replaced_and_a_foreign_file_is_not(runtime_dir: Path, isolated_agent_dir: Path) -> None:
    path = runtime_dir / "pi-sessiond" / "daemon.sock"
    path.parent.mkdir(mode=0o700)
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(path))
    stale.close()  # a socket file nobody listens on
    listener = Listener("--unix")
    listener.stop()
    path.write_text("not a socket")
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "serve", "--unix"], capture_output=True,
                          timeout=TIMEOUT)
    assert done.returncode == 1 and b"not a socket" in done.stderr and path.read_text() == "not a socket"

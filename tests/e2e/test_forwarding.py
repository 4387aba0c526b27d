"""``pi/compact`` forwarded to a live Pi's socket, against the real daemon, with this test standing in for Pi.

The stand-in holds the lock through ``pi-sessiond hold-lock`` (its own pid, its
socket), answers forwarded requests on a Unix socket as the extension does
(JSON-RPC, LSP framing), and sends the ``pi/summarize`` of "its" compaction
with ``forRequest`` through the editor's connection, so this checks that the
draft reuses the forwarded request's job slot (no ``busy``) and progress bar.
The real Pi runs the same path in ``test_pi_extension.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (  # noqa: F401 - daemons_fixture provides `daemons`
    TIMEOUT,
    Daemons,
    call,
    cancel,
    cli_json,
    daemons_fixture,
    generated,
    progress_kinds,
    read_lines,
    send,
)

SMALL_KEEP = {"compaction": {"keepRecentTokens": 2000}}
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")
Handler = Callable[[dict[str, Any]], Awaitable[Any]]


class FakePi:
    """A Unix-socket JSON-RPC server answering ``pi/compact`` with ``handler``; records cancellations."""

    def __init__(self, path: str, handler: Handler) -> None:
        self.path = path
        self.handler = handler
        self.cancelled = asyncio.Event()
        self.requests: list[dict[str, Any]] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> None:
        self.server = await asyncio.start_unix_server(self._serve, self.path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await _read(reader)
        self.requests.append(request)
        answer = asyncio.ensure_future(self.handler(request["params"]))
        watch = asyncio.ensure_future(_read(reader))
        done, _ = await asyncio.wait({answer, watch}, return_when=asyncio.FIRST_COMPLETED)
        if watch in done and watch.result().get("method") == "$/cancelRequest":
            self.cancelled.set()
            answer.cancel()
            reply = {"jsonrpc": "2.0", "id": request["id"],
                     "error": {"code": -32800, "message": "cancelled", "data": {"reason": "cancelled"}}}
        else:
            watch.cancel()
            reply = {"jsonrpc": "2.0", "id": request["id"], "result": answer.result()}
        body = json.dumps(reply).encode()
        writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()


async def _read(reader: asyncio.StreamReader) -> dict[str, Any]:
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.split(b":", 1)[1].split(b"\r\n", 1)[0])
    message: dict[str, Any] = json.loads(await reader.readexactly(length))
    return message


@pytest_asyncio.fixture
async def socket_dir() -> AsyncIterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="pisd-"))  # short: Unix socket paths are limited
    yield path
    shutil.rmtree(path, ignore_errors=True)


def hold(path: Path, socket: str) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "hold-lock", str(path), "--pid", str(os.getpid()),
                              "--socket", socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and json.loads(child.stdout.readline())["ready"] is True
    return child


def append_as_pi(path: Path, draft: dict[str, Any]) -> dict[str, Any]:
    """Write the draft as Pi writes a compaction an extension supplied (parent: the file's last entry)."""
    last = read_lines(path)[-1]
    entry = {"type": "compaction", "id": "fa11c0de", "parentId": last["id"], "timestamp": "2026-01-01T00:00:00.000Z",
             "summary": draft["summary"], "firstKeptEntryId": draft["firstKeptEntryId"],
             "tokensBefore": draft["tokensBefore"], "details": draft["details"], "fromHook": True}
    with open(path, "a") as fh:
        fh.write(json.dumps(entry, separators=(",", ":")) + "\n")
    return entry


async def test_a_forwarded_compaction_is_written_by_pi_and_its_summary_reuses_the_job(
    daemons: Daemons, tmp_path: Path, socket_dir: Path
) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    preparation = cli_json("compact", str(path), "--dry-run", "--json", "--keep-recent-tokens", "2000")
    client = await daemons.start(SMALL_KEEP)
    outside: list[str] = []

    async def compact_in_pi(params: dict[str, Any]) -> Any:
        try:  # anyone else asking for a summary of this session now is busy: the forwarded job holds it
            await call(client, "pi/summarize", {"path": str(path), "preparation": preparation})
        except JsonRpcException as exc:
            outside.append(exc.data["reason"])
        draft = await call(client, "pi/summarize", {"path": str(path), "preparation": preparation,
                                                    "forRequest": params["forRequest"]})
        entry = append_as_pi(path, draft)
        return {"entry": entry, "tokensBefore": entry["tokensBefore"]}

    pi = FakePi(str(socket_dir / "pi-test.sock"), compact_in_pi)
    await pi.start()
    child = hold(path, pi.path)
    try:
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        result = await call(client, "pi/compact", {"sessionId": sid, "workDoneToken": "fwd",
                                                   "customInstructions": "keep the tests"})
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
        await pi.close()
    [request] = pi.requests
    assert request["method"] == "pi/compact" and request["params"]["customInstructions"] == "keep the tests"
    assert outside == ["busy"]
    assert result["entry"] == read_lines(path)[-1] and result["entry"]["fromHook"] is True
    assert result["entry"]["firstKeptEntryId"] == preparation["firstKeptEntryId"]
    assert 0 < result["estimatedTokensAfter"] < result["tokensBefore"] == preparation["tokensBefore"]
    kinds = progress_kinds(client, "fwd")
    assert kinds[0] == "Begin" and kinds[-1] == "End" and kinds.count("Begin") == 1
    messages = [r.message for r in client.progress_reports["fwd"][1:-1]]
    assert messages[0] == "compacting in Pi" and messages[-1] == "done"
    assert len(messages) > 2  # the draft's phases moved the editor's bar


async def test_cancelling_the_editors_request_cancels_it_in_pi(daemons: Daemons, tmp_path: Path,
                                                                socket_dir: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    before = path.read_bytes()
    started = asyncio.Event()

    async def never(params: dict[str, Any]) -> Any:
        started.set()
        await asyncio.Event().wait()

    pi = FakePi(str(socket_dir / "pi-test.sock"), never)
    await pi.start()
    child = hold(path, pi.path)
    client = await daemons.start(SMALL_KEEP)
    try:
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        pending = send(client, "pi/compact", {"sessionId": sid}, "fwd-2")
        await asyncio.wait_for(started.wait(), TIMEOUT)
        cancel(client, "fwd-2")
        with pytest.raises(JsonRpcException) as cancelled:
            await asyncio.wait_for(pending, TIMEOUT)
        assert cancelled.value.code == -32800
        await asyncio.wait_for(pi.cancelled.wait(), TIMEOUT)  # Pi was told
        with pytest.raises(JsonRpcException) as moved:
            await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": read_lines(path)[5]["id"]})
        assert moved.value.data["reason"] == "liveWriter"
        assert moved.value.data["holder"]["pid"] == os.getpid() and moved.value.data["piCommand"].startswith("/tree")
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
        await pi.close()
    assert path.read_bytes() == before


async def test_the_command_line_compact_of_a_session_pi_holds_is_carried_out_by_pi(tmp_path: Path,
                                                                                   socket_dir: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    preparation = cli_json("compact", str(path), "--dry-run", "--json", "--keep-recent-tokens", "2000")
    draft = {"summary": "## Goal\n- written by Pi", "firstKeptEntryId": preparation["firstKeptEntryId"],
             "tokensBefore": preparation["tokensBefore"], "details": {"readFiles": [], "modifiedFiles": []}}

    async def compact_in_pi(params: dict[str, Any]) -> Any:
        entry = append_as_pi(path, draft)
        return {"entry": entry, "tokensBefore": entry["tokensBefore"]}

    pi = FakePi(str(socket_dir / "pi-test.sock"), compact_in_pi)
    await pi.start()
    child = hold(path, pi.path)
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pi_sessiond", "compact", str(path), "--json",
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(process.communicate(), TIMEOUT)
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=TIMEOUT)
        await pi.close()
    assert process.returncode == 0, err.decode()
    result = json.loads(out)
    assert result["entry"] == read_lines(path)[-1] and result["entry"]["summary"] == "## Goal\n- written by Pi"
    assert [r["method"] for r in pi.requests] == ["pi/compact"]

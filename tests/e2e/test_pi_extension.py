"""The Pi extension (editors/pi) inside the real Pi 1.6.0 agent, in RPC mode, on Node 24.

Pi's model is the loopback provider (``tests/loopback_provider.py``) through a
``models.json`` custom provider in a temporary ``PI_CODING_AGENT_DIR``, with a
small context window so that a threshold auto-compaction happens after a few
prompts. The daemon's summarizer is the offline one, so a summary that Pi
made itself (through the loopback) is told apart from the daemon's: the
loopback's answers name their model ("loopback model loopm").

Checked: a threshold auto-compaction in Pi uses the daemon's summary; Pi holds
the session's lock, so a second writer is refused with ``locked`` naming Pi
and its pid (reading still works); a ``pi/compact`` sent to a daemon for the
live session is carried out by Pi; Pi's next message continues after that
compaction (its context holds the summary); ``pi/navigateTree`` answers
``liveWriter`` with the command to type in Pi; killing Pi releases the lock.
With ``compaction.masking`` enabled (and Pi's ``read`` tool), the masking tier
runs through Pi: at the turn boundary that crosses the threshold Pi writes the
daemon's ``context_edit`` placeholders itself, its threshold check then finds
the context small enough (no compaction, no summary request), and its next
request to the model is masked.
Skipped (failed under CI) only when Node 24 or Pi 1.6.0 is missing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.conftest import REPO, require
from tests.e2e.daemon_client import (  # noqa: F401 - daemons_fixture provides `daemons`
    Daemons,
    call,
    cancel,
    daemons_fixture,
    progress_kinds,
    settle,
    wait_event,
)
from tests.loopback_provider import LoopbackProvider, first_user_text

from pi_sessiond.compaction.masking import MARKER
from pi_sessiond.store import lockinfo
from pi_sessiond.store.guard import LockedError
from pi_sessiond.store.session import Session

PI_PACKAGE = REPO / "tests" / "parity" / "node_modules" / "@earendil-works" / "pi-coding-agent"
PI_CLI = PI_PACKAGE / "dist" / "bundle" / "cli.js"
EXTENSION = REPO / "editors" / "pi"
DEADLINE = 120.0
LOOPBACK_MARK = "loopback model loopm"
PROMPT = "Please explain the parser module in detail, step by step. " * 12
pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")


def node24() -> Path | None:
    done = subprocess.run(["bash", str(REPO / "scripts" / "install-tools.sh"), "--print-node24"],
                          capture_output=True, text=True, timeout=60)
    path = Path(done.stdout.strip())
    return path if done.returncode == 0 and path.is_file() and os.access(path, os.X_OK) else None


@pytest.fixture(scope="module")
def extension() -> Path:
    """``editors/pi`` built (``npm ci`` once, then ``npm run build``)."""
    require(shutil.which("npm") is not None, "npm is needed to build editors/pi")
    run = {"cwd": EXTENSION, "capture_output": True, "text": True, "stdin": subprocess.DEVNULL}
    if not (EXTENSION / "node_modules").is_dir():
        done = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], timeout=600, **run)  # type: ignore[call-overload]
        assert done.returncode == 0, done.stderr[-4000:]
    done = subprocess.run(["npm", "run", "build"], timeout=300, **run)  # type: ignore[call-overload]
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    return EXTENSION / "dist" / "index.js"


def test_the_extension_type_checks_and_passes_its_node_tests(extension: Path) -> None:
    done = subprocess.run(["npm", "test"], cwd=EXTENSION, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL, env={**os.environ, "NO_COLOR": "1"})
    output = done.stdout + done.stderr
    assert done.returncode == 0 and "# fail 0" in output, output[-4000:]


class PiRpc:
    """``pi --mode rpc`` as a child: commands in, every record kept (a reader thread queues them)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], stderr: IO[str]) -> None:
        self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=stderr)
        self.records: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._ids = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.strip():
                self._queue.put(json.loads(line))

    def send(self, command: dict[str, Any]) -> str:
        self._ids += 1
        ident = f"c{self._ids}"
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps({"id": ident, **command}) + "\n").encode())
        self.process.stdin.flush()
        return ident

    def wait(self, predicate: Callable[[dict[str, Any]], bool], what: str, timeout: float = DEADLINE) -> dict[str, Any]:
        """The next record (after those already seen) matching ``predicate``."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                record = self._queue.get(timeout=0.5)
            except queue.Empty:
                if self.process.poll() is not None:
                    pytest.fail(f"Pi exited ({self.process.returncode}) while waiting for {what}")
                continue
            self.records.append(record)
            if predicate(record):
                return record
        pytest.fail(f"timed out after {timeout}s waiting for {what}")

    def command(self, command: dict[str, Any]) -> Any:
        ident = self.send(command)
        answer = self.wait(lambda r: r.get("id") == ident and r.get("type") == "response", command["type"])
        assert answer["success"], answer
        return answer.get("data")

    def prompt(self, text: str) -> None:
        self.command({"type": "prompt", "message": text})
        self.wait(lambda r: r.get("type") == "agent_settled", "agent_settled")

    def seen(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r.get("type") == kind]


Started = tuple[PiRpc, LoopbackProvider]


@pytest.fixture
def start_pi(extension: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Started]]:
    """``start_pi(command=…, summarizer=…, installed=…, tools=…, masking=…)``: Pi with the extension, its
    model on a loopback provider.

    ``command`` is the extension's ``PI_SESSIOND_COMMAND`` (default: this interpreter's pi_sessiond);
    ``summarizer`` the daemons' ``summarizer`` settings (default: the offline one); ``installed`` loads
    the extension from ``<agent dir>/extensions/`` (its ``package.json`` manifest) instead of ``-e``;
    ``tools`` Pi's ``--tools`` (default ``--no-tools``); ``masking`` the daemons' ``compaction.masking``;
    ``prepare_at`` their ``compaction.prepareAt``, and then their summarizer is the loopback model too;
    ``model_summarizer`` makes it the loopback model with these extra ``summarizer`` keys; ``window``,
    ``max_tokens``, ``reserve`` and ``keep`` size Pi's model and both sides' compaction.
    """
    node = node24()
    require(node is not None, "Node 24 is missing: run scripts/install-tools.sh node24")
    require(PI_CLI.is_file(), f"Pi 1.6.0 is missing at {PI_CLI}: npm ci --prefix tests/parity")
    started: list[PiRpc] = []
    runtime = Path(tempfile.mkdtemp(prefix="pisd-"))  # short: socket paths are limited to 107 bytes
    with contextlib.ExitStack() as stack:
        loopback = stack.enter_context(LoopbackProvider())

        def start(command: list[str] | None = None, summarizer: dict[str, Any] | None = None,
                  installed: bool = False, tools: str | None = None,
                  masking: dict[str, Any] | None = None, prepare_at: float | None = None,
                  model_summarizer: dict[str, Any] | None = None, window: int = 3000, max_tokens: int = 500,
                  reserve: int = 1000, keep: int = 150) -> Started:
            agent, work = tmp_path / "agent", tmp_path / "work"
            agent.mkdir()
            work.mkdir()
            model = {"id": "loopm", "contextWindow": window, "maxTokens": max_tokens,
                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}}
            provider = {"baseUrl": loopback.base_url + "/v1", "api": "openai-completions", "apiKey": "k",
                        "models": [model]}
            (agent / "models.json").write_text(json.dumps({"providers": {"loop": provider}}))
            settings: dict[str, Any] = {"compaction": {"enabled": True, "reserveTokens": reserve,
                                                       "keepRecentTokens": keep}}
            if summarizer is not None:
                settings["summarizer"] = summarizer
            if masking is not None:
                settings["compaction"]["masking"] = masking
            if prepare_at is not None:  # the daemons draft in the background, with the loopback model
                settings["compaction"]["prepareAt"] = prepare_at
                model_summarizer = model_summarizer or {}
            if model_summarizer is not None:
                settings["summarizer"] = {"provider": "openai", "baseUrl": loopback.base_url + "/v1",
                                          "model": "loopm", "apiKeyEnv": "LOOPBACK_KEY", **model_summarizer}
            (agent / "settings.json").write_text(json.dumps(settings))
            monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))  # the test's daemons read the same settings
            monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
            monkeypatch.setenv("LOOPBACK_KEY", "k")
            sessiond = command if command is not None else [sys.executable, "-m", "pi_sessiond"]
            env = {**os.environ, "PI_OFFLINE": "1", "PI_SESSIOND_COMMAND": json.dumps(sessiond)}
            argv = [str(node), str(PI_CLI), "--mode", "rpc", "--provider", "loop", "--model", "loopm",
                    *(["--tools", tools] if tools else ["--no-tools"])]
            if installed:  # as the README installs it: a folder in the agent dir, found by its package.json
                (agent / "extensions").mkdir()
                (agent / "extensions" / "pi-sessiond").symlink_to(EXTENSION, target_is_directory=True)
            else:
                argv += ["-e", str(extension)]
            stderr = stack.enter_context(open(tmp_path / "pi.stderr", "w"))
            rpc = PiRpc(argv, work, env, stderr)
            started.append(rpc)
            return rpc, loopback

        try:
            yield start
        finally:
            for rpc in started:
                if rpc.process.poll() is None:
                    rpc.process.kill()
                rpc.process.wait(timeout=60)
            shutil.rmtree(runtime, ignore_errors=True)


def compact_until_threshold(rpc: PiRpc) -> dict[str, Any]:
    """Prompt until Pi auto-compacts at its threshold (window 3000, reserve 1000); its ``compaction_end``."""
    def ends() -> list[dict[str, Any]]:
        return [r for r in rpc.seen("compaction_end") if r.get("reason") == "threshold"]

    for n in range(10):
        rpc.prompt(f"Message {n}: {PROMPT}")
        if ends():
            break
    [end] = ends()[:1]
    return end


def session_of(rpc: PiRpc) -> Path:
    state = rpc.command({"type": "get_state"})
    return Path(state["sessionFile"])


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def held_by_pi(path: Path, pid: int) -> bool:
    body = lockinfo.read_body(lockinfo.lock_path(path))
    return body is not None and body.program == "pi" and body.pid == pid


def poll(predicate: Callable[[], bool], what: str, timeout: float = DEADLINE) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            pytest.fail(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def pi_summary_requests(loopback: LoopbackProvider) -> list[Any]:
    """Requests Pi's own summarizer sent (its summarization prompt wraps the conversation)."""
    return [r for r in loopback.requests if "<conversation>" in first_user_text(r.body)]


def refused_writer(path: Path) -> LockedError:
    session = Session.open(path)
    try:
        session.append([{"type": "session_info", "name": "second writer"}])
    except LockedError as exc:
        return exc
    finally:
        session.close()
    pytest.fail("a second writer was not refused while Pi holds the session")


async def test_pi_with_the_extension_uses_the_daemon_and_carries_out_editors_compactions(
    start_pi: Callable[..., Started], daemons: Daemons
) -> None:
    rpc, loopback = start_pi()
    path = session_of(rpc)
    for n in range(3):  # under the threshold (window 3000, reserve 1000)
        rpc.prompt(f"Message {n}: {PROMPT}")
    assert not rpc.seen("compaction_end")
    poll(lambda: path.is_file() and held_by_pi(path, rpc.process.pid), "Pi's lock body")
    body = lockinfo.read_body(lockinfo.lock_path(path))
    assert body is not None and body.socket == str(lockinfo.pi_socket_path(path))  # TS and Python agree
    assert Path(body.socket).is_socket() and Path(body.socket).stat().st_mode & 0o777 == 0o600

    refused = refused_writer(path)  # a second writer is refused, naming Pi
    assert refused.data["holder"]["program"] == "pi" and refused.data["holder"]["pid"] == rpc.process.pid
    assert f"pid {rpc.process.pid}" in refused.message

    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    live = await wait_event(client, "pi/sessionLive", timeout=DEADLINE)
    assert live == {"sessionId": sid, "path": str(path), "live": True,
                    "holder": {"pid": rpc.process.pid, "program": "pi", "socket": body.socket}}
    before = len(lines(path))
    result = await call(client, "pi/compact", {"sessionId": sid, "workDoneToken": "fwd"}, timeout=DEADLINE)
    written = lines(path)
    assert len(written) == before + 1 and written[-1] == result["entry"]  # Pi wrote it: one entry
    assert result["entry"]["type"] == "compaction" and result["entry"]["fromHook"] is True
    assert LOOPBACK_MARK not in result["entry"]["summary"]  # the daemon's (offline) summarizer wrote it
    assert 0 < result["estimatedTokensAfter"] < result["tokensBefore"]
    assert progress_kinds(client, "fwd")[0] == "Begin" and progress_kinds(client, "fwd")[-1] == "End"
    assert pi_summary_requests(loopback) == []  # Pi's own summarizer never ran
    with pytest.raises(JsonRpcException) as moved:
        await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": written[3]["id"]})
    assert moved.value.data["reason"] == "liveWriter" and moved.value.data["piCommand"].startswith("/tree")

    asked = len(loopback.requests)
    rpc.prompt("What did we do so far?")  # Pi's next message continues after the compaction
    newest = lines(path)[-1]["id"]
    await wait_event(client, "pi/sessionChanged", lambda p: p["reason"] == "external", timeout=DEADLINE)
    await followed(client, sid, newest)  # the daemon folded in what Pi wrote: editors see it
    after = lines(path)
    chain = {e["id"]: e for e in after}
    leaf = after[-1]
    ancestors = []
    while leaf is not None:
        ancestors.append(leaf["id"])
        leaf = chain.get(leaf.get("parentId"))
    assert result["entry"]["id"] in ancestors
    sent = json.dumps(loopback.requests[asked].body)
    assert result["entry"]["summary"].splitlines()[1][:40] in sent.replace("\\n", "\n")

    end = compact_until_threshold(rpc)  # Pi's threshold compaction uses the daemon's summary too
    assert end["reason"] == "threshold" and not end.get("errorMessage"), end
    compactions = [e for e in lines(path) if e["type"] == "compaction"]
    assert len(compactions) == 2 and all(c["fromHook"] is True for c in compactions)  # the extension's
    assert LOOPBACK_MARK not in compactions[1]["summary"]
    assert pi_summary_requests(loopback) == []
    assert not notices(rpc)  # no fallback warning

    os.kill(rpc.process.pid, signal.SIGKILL)  # a killed Pi frees the lock
    rpc.process.wait(timeout=60)
    released = await wait_event(client, "pi/sessionLive", lambda p: p["live"] is False, timeout=DEADLINE)
    assert released == {"sessionId": sid, "path": str(path), "live": False}
    poll(lambda: _writable(path), "the lock to be released after Pi was killed")


async def followed(client: Any, sid: str, entry_id: str) -> None:
    """Poll ``pi/getEntries`` until the daemon has folded in ``entry_id`` (generous deadline)."""
    end = time.monotonic() + DEADLINE
    while not (await call(client, "pi/getEntries", {"sessionId": sid, "ids": [entry_id]}))["entries"]:
        if time.monotonic() > end:
            pytest.fail(f"the daemon never folded in {entry_id}")
        await asyncio.sleep(0.1)


def _writable(path: Path) -> bool:
    session = Session.open(path)
    try:
        session.append([{"type": "session_info", "name": "after Pi"}])
        return True
    except LockedError:
        return False
    finally:
        session.close()


def notices(rpc: PiRpc) -> list[str]:
    """What the extension told the user (``ctx.ui.notify`` arrives as an RPC extension UI request)."""
    return [str(r.get("message")) for r in rpc.records
            if r.get("type") == "extension_ui_request" and r.get("method") == "notify"]


async def test_without_a_daemon_pi_summarizes_itself_and_the_user_is_told_once(
    start_pi: Callable[..., Started], tmp_path: Path
) -> None:
    rpc, loopback = start_pi(command=[str(tmp_path / "no-such-pi-sessiond")], installed=True)
    path = session_of(rpc)
    end = compact_until_threshold(rpc)
    assert end["reason"] == "threshold" and not end.get("errorMessage"), end
    compactions = [e for e in lines(path) if e["type"] == "compaction"]
    assert compactions and LOOPBACK_MARK in compactions[0]["summary"]  # Pi's own summarizer ran
    assert compactions[0]["fromHook"] is False
    assert pi_summary_requests(loopback)
    told = notices(rpc)
    assert len(told) == 1 and told[0].startswith("pi-sessiond: "), told


async def test_cancelling_a_forwarded_compaction_cancels_it_in_pi(
    start_pi: Callable[..., Started], daemons: Daemons
) -> None:
    rpc, loopback = start_pi(summarizer={"provider": "openai", "baseUrl": "", "model": "loopm",
                                         "apiKeyEnv": "LOOPBACK_KEY"})
    loopback_url = loopback.base_url + "/v1"
    settings_file = Path(os.environ["PI_CODING_AGENT_DIR"]) / "settings.json"
    settings = json.loads(settings_file.read_text())
    settings["summarizer"]["baseUrl"] = loopback_url
    settings["compaction"]["enabled"] = False  # no threshold compaction: only the forwarded one
    settings_file.write_text(json.dumps(settings))
    path = session_of(rpc)
    for n in range(3):
        rpc.prompt(f"Message {n}: {PROMPT}")
    before = path.read_bytes()
    loopback.set_default("stall")  # the daemon's summary never comes
    client = await daemons.start()
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    pending = asyncio.wrap_future(client.protocol.send_request("pi/compact", {"sessionId": sid}, msg_id="fwd-1"))
    summary_sent = lambda: summary_requests(loopback)  # noqa: E731
    await settle(summary_sent, timeout=DEADLINE, what="the daemon's summary request")
    cancel(client, "fwd-1")
    with pytest.raises(JsonRpcException) as cancelled:
        await asyncio.wait_for(pending, DEADLINE)
    assert cancelled.value.code == -32800
    failed = rpc.wait(lambda r: r.get("type") == "compaction_end", "Pi's compaction_end")
    assert failed.get("aborted") is True or failed.get("errorMessage"), failed
    await settle(lambda: all(r.disconnected_at is not None for r in summary_sent()), timeout=DEADLINE,
                 what="the summary request to be dropped")
    assert path.read_bytes() == before  # nothing written


README_LINE = "README line {n}: the parser keeps token t{n} of the original file in slot {n}."
MASKING = {"enabled": True, "tools": ["read"], "minTokens": 200, "olderThanTokens": 300}


def entry_types(path: Path) -> list[str]:
    return [e["type"] for e in lines(path)]


async def test_masking_at_the_threshold_is_written_by_pi_and_its_next_request_is_masked(
    start_pi: Callable[..., Started], tmp_path: Path
) -> None:
    """``compaction.masking`` through a live Pi: at the turn boundary that crosses the threshold the
    extension asks the daemon (``pi/mask {dryRun, reason: "threshold"}``), Pi writes the ``context_edit``
    itself, its threshold check sees the masked context (no compaction, no model request for a summary),
    and its next request carries the placeholder instead of the old tool output."""
    rpc, loopback = start_pi(tools="read", masking=MASKING)
    (tmp_path / "work" / "README.md").write_text("\n".join(README_LINE.format(n=n) for n in range(40)) + "\n")
    loopback.script("tool_only")  # Pi's first request answers with a read of README.md
    rpc.prompt("Read the README, please.")
    path = session_of(rpc)
    [result] = [e for e in lines(path) if e.get("message", {}).get("role") == "toolResult"]
    assert result["message"]["toolName"] == "read" and "README line 39" in json.dumps(result)
    assert "context_edit" not in entry_types(path)  # under the threshold: the daemon masks nothing
    for n in range(10):
        rpc.prompt(f"Message {n}: {PROMPT}")
        if "context_edit" in entry_types(path) or rpc.seen("compaction_end"):
            break
    assert not rpc.seen("compaction_end"), "Pi compacted instead of masking"
    written = lines(path)
    [edit] = [e for e in written if e["type"] == "context_edit"]
    assert edit["targetId"] == result["id"]
    placeholder = edit["replacement"]["content"][0]["text"]
    assert placeholder.startswith(MARKER) and result["id"] in placeholder and "README.md" in placeholder
    assert held_by_pi(path, rpc.process.pid)  # Pi held the lock throughout: Pi wrote the edit
    by_id = {e["id"]: e for e in written}
    assert by_id[edit["parentId"]]["message"]["role"] == "assistant"  # on Pi's branch, at its turn boundary
    assert "compaction" not in entry_types(path) and pi_summary_requests(loopback) == []

    asked = len(loopback.requests)
    rpc.prompt("And what does the README say?")
    sent = json.dumps(loopback.requests[asked].body)
    assert MARKER in sent and "README line 20:" not in sent  # Pi's next request is masked (head and tail kept)
    assert [e["targetId"] for e in lines(path) if e["type"] == "context_edit"] == [result["id"]]  # masked once

    end = compact_until_threshold(rpc)  # nothing left to mask: Pi compacts, with the daemon's summary
    assert end["reason"] == "threshold" and not end.get("errorMessage"), end
    [compaction] = [e for e in lines(path) if e["type"] == "compaction"][:1]
    assert compaction["fromHook"] is True and LOOPBACK_MARK not in compaction["summary"]
    assert pi_summary_requests(loopback) == []


def is_summary_request(body: Any) -> bool:
    """A summary request: a serialized one (the daemon's and Pi's prompts both wrap the conversation) or the
    daemon's replay of Pi's own request (``summarizer.cacheReuse``), which ends with the summary instruction."""
    last = (body.get("messages") or [{}])[-1]
    replayed = isinstance(last.get("content"), str) and "Do not call any tool" in last["content"]
    return replayed or "<conversation>" in first_user_text(body)


def summary_requests(loopback: LoopbackProvider) -> list[Any]:
    """Summary requests to the loopback model, of either shape."""
    return [r for r in loopback.requests if is_summary_request(r.body)]


async def test_pi_gets_the_background_draft_at_its_threshold_without_a_model_request_then(
    start_pi: Callable[..., Started],
) -> None:
    """``compaction.prepareAt`` through a live Pi: the daemon drafts the compaction in the background
    while Pi runs (it follows Pi's appends); when Pi reaches its threshold, ``session_before_compact``
    gets that draft from ``pi/summarize`` (waiting for it if it is still being made) instead of a new
    summary of Pi's preparation, and Pi writes it (``fromHook``) with the draft's cut.

    With ``prepareAt`` 0.9 exactly one of Pi's turns ends in (0.9 × threshold, threshold] (the turns
    grow the context by about 290 tokens): the one before the crossing. So the draft is made once,
    at that turn's boundary, and its cut is in that turn; a summary of Pi's own preparation at the
    crossing would be a second request, and cut in the crossing turn.
    """
    rpc, loopback = start_pi(prepare_at=0.9)
    path = session_of(rpc)
    for n in range(10):
        rpc.prompt(f"Message {n}: {PROMPT}")
        if rpc.seen("compaction_start"):
            break
    [start] = rpc.seen("compaction_start")
    [end] = rpc.seen("compaction_end")  # before agent_settled, which the prompt waited for
    assert start["reason"] == "threshold" and end["reason"] == "threshold" and not end.get("errorMessage"), end
    [drafted] = summary_requests(loopback)  # the background draft, and no other summary request
    assert "<previous-summary>" not in first_user_text(drafted.body)
    written = lines(path)
    [compaction] = [e for e in written if e["type"] == "compaction"]
    assert compaction["fromHook"] is True and LOOPBACK_MARK in compaction["summary"]  # the daemon's model draft
    assert end["result"]["summary"] == compaction["summary"]
    users = [e["id"] for e in written if e.get("message", {}).get("role") == "user"]
    ids = [e["id"] for e in written]
    cut = ids.index(compaction["firstKeptEntryId"])
    assert ids.index(users[-2]) <= cut < ids.index(users[-1])  # the draft's cut: the turn before the crossing
    assert not notices(rpc)  # no fallback to Pi's own summarizer

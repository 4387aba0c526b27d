"""The example agent (examples/agent/agent.py) end to end: the real daemon, the loopback model over HTTP.

Each run: a 24k window, hundreds of steps with large tool results, every acknowledged entry on disk
once, no context over the window handed out, every provider overflow recovered, the fact planted in
the first message still in the last context. Also: two clients of one ``--unix`` daemon on one
session, and a SIGKILL of the daemon between an append and its reply.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from examples.agent.agent import Agent, Daemon
from tests.loopback_provider import Fault, LoopbackProvider

WINDOW = 24000
SMALLER_WINDOW = 12000  # a model window smaller than the daemon believes: contexts overflow and are recovered
FACT = "HERON-7"
SERVE = [sys.executable, "-m", "pi_sessiond", "serve"]


@pytest.fixture
def model() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as loopback:
        loopback.set_default(Fault("tool_only"))
        loopback.windows = {"agent-model": WINDOW}
        yield loopback


@pytest.fixture
def runtime_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A short private ``$XDG_RUNTIME_DIR`` (Unix socket paths are limited)."""
    path = Path(os.path.realpath("/tmp")) / f"ag{os.getpid()}-{time.monotonic_ns() % 10**8}"
    path.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(path))
    yield path


def start(daemon: Daemon, tmp_path: Path, loopback: LoopbackProvider, **options: Any) -> tuple[Agent, str]:
    """A new session with the fact planted; the agent and the session's file."""
    daemon.initialize({"contextWindow": WINDOW})
    session = daemon.call("pi/createSession", {"cwd": str(tmp_path)})
    agent = Agent(daemon, session["sessionId"], model_url=loopback.base_url, **options)
    agent.say(f"Read the files one by one. Remember: the deploy code word is {FACT}.", 0)
    return agent, str(session["path"])


def on_disk(path: str) -> list[str]:
    return [json.loads(line).get("id") for line in Path(path).read_text().splitlines()[1:]]


def check_run(agent: Agent, path: str, compactions: int = 10) -> None:
    ids = on_disk(path)
    assert len(ids) == len(set(ids)), "an entry was written twice"
    assert set(agent.acknowledged) <= set(ids), "an acknowledged entry is missing"
    assert 0 < agent.largest_context <= agent.window == WINDOW
    assert agent.recovered == agent.overflows
    context = agent.context()
    assert FACT in json.dumps(context["messages"])
    started = [p for m, p in agent.daemon.notifications if m == "pi/compactionStarted"]
    ended = [p for m, p in agent.daemon.notifications if m == "pi/compactionEnded"]
    assert len(started) == len(ended) >= compactions


@pytest.mark.parametrize("with_usage", [True, False], ids=["usage", "no-usage"])
def test_hundreds_of_steps_through_a_24k_window(tmp_path: Path, model: LoopbackProvider, with_usage: bool) -> None:
    daemon = Daemon.spawn(SERVE)
    try:
        agent, path = start(daemon, tmp_path, model, with_usage=with_usage)
        for step in range(1, 151):
            agent.step(step)
        threshold = [p for m, p in daemon.notifications if m == "pi/compactionStarted" and p["reason"] == "threshold"]
        assert len(threshold) >= 8 and agent.overflows == 0  # one user turn, many automatic compactions
        model.windows = {"agent-model": SMALLER_WINDOW}
        for step in range(151, 301):
            agent.step(step)
        assert len(agent.acknowledged) == 1 + 2 * 300
        assert agent.overflows > 0  # the model's window is smaller than the daemon's: recovery was needed
        check_run(agent, path)
    finally:
        daemon.close()


def test_two_clients_of_one_unix_daemon_append_to_one_session(
    tmp_path: Path, model: LoopbackProvider, runtime_dir: Path
) -> None:
    socket_path = runtime_dir / "d.sock"
    server = subprocess.Popen([*SERVE, "--unix", str(socket_path)], stderr=subprocess.PIPE)
    assert server.stderr is not None
    assert "listening on" in server.stderr.readline().decode()
    first, second = Daemon.connect(str(socket_path)), Daemon.connect(str(socket_path))
    try:
        a, path = start(first, tmp_path, model, name="a")
        second.initialize({"contextWindow": WINDOW})
        opened = second.call("pi/openSession", {"path": path})
        assert opened["sessionId"] == a.session_id  # the same session, not a locked copy
        b = Agent(second, opened["sessionId"], model_url=model.base_url, name="b")
        for step in range(1, 101):
            a.step(step)
            b.step(step)
        merged = Agent(first, a.session_id, model_url=model.base_url)
        merged.acknowledged = a.acknowledged + b.acknowledged
        merged.largest_context, merged.window = max(a.largest_context, b.largest_context), a.window
        merged.overflows, merged.recovered = a.overflows + b.overflows, a.recovered + b.recovered
        check_run(merged, path, compactions=5)
        written = sum(json.loads(line)["type"] == "compaction" for line in Path(path).read_text().splitlines()[1:])
        ended = [p for m, p in first.notifications if m == "pi/compactionEnded"]
        # all heard: every compaction written ended with its entry (one that wrote nothing, e.g. masking was
        # enough or the leaf moved under it, ends without a compaction entry)
        assert len([p for p in ended if (p.get("entry") or {}).get("type") == "compaction"]) == written
        # Each client heard of the other's appends.
        heard = [p for m, p in first.notifications if m == "pi/sessionChanged" and p["reason"] == "append"]
        assert len(heard) >= len(a.acknowledged) // 3 + 100
    finally:
        server.send_signal(signal.SIGTERM)  # with both clients connected
        assert server.wait(60) == 0
        log = server.stderr.read().decode(errors="replace")
        assert "Traceback" not in log, log


def test_a_sigkill_between_an_append_and_its_reply_loses_nothing_and_the_retry_is_not_doubled(
    tmp_path: Path, model: LoopbackProvider
) -> None:
    daemon = Daemon.spawn(SERVE)
    agent, path = start(daemon, tmp_path, model)
    for step in range(1, 41):
        agent.step(step)
    entries = agent.entries_of(41, agent.think())
    daemon.send("pi/append", {"sessionId": agent.session_id, "entries": entries})  # no reply read
    assert isinstance(daemon._closer, subprocess.Popen)
    daemon._closer.kill()
    daemon._closer.wait(30)
    assert set(agent.acknowledged) <= set(on_disk(path))
    restarted = Daemon.spawn(SERVE)
    try:
        restarted.initialize({"contextWindow": WINDOW})
        session = restarted.call("pi/openSession", {"path": path})
        agent.daemon, agent.session_id = restarted, session["sessionId"]
        retried = agent.append(entries)  # whether or not the first one landed
        assert retried == [e["id"] for e in entries]
        for step in range(42, 81):
            agent.step(step)
        check_run(agent, path, compactions=2)
    finally:
        restarted.close()


"""A big session opened tail-first through the daemon: the leaf's context first, the whole file after.

Each test opens the same file in a daemon that reads whole files
(``daemon.tailOpenBytes: 0``) and in one that opens every file tail-first
(``tailOpenBytes: 1``), and compares what the client sees: SESSION, the
context, ``pi/sessionLoaded`` and what every other request answers.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import (
    Daemons,
    call,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    user_msg,
    wait_event,
)
from tests.unit.store.helpers import chain, compaction, thinking, write_lines

from pi_sessiond.examples.generator import generate, write

TAIL_FIRST = {"daemon": {"tailOpenBytes": 1}}
WHOLE_FILE = {"daemon": {"tailOpenBytes": 0}}


@pytest.fixture
def long_session(tmp_path: Path) -> Path:
    """A generated long session with a broken line in the middle (a warning only the whole file has)."""
    path = tmp_path / "long.jsonl"
    write(path, generate(seed=8, entries=4000, shape="long", compaction_every=1500))
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(len(lines) // 3, b"{broken\n")
    path.write_bytes(b"".join(lines))
    return path


async def opened(daemons: Daemons, settings: dict[str, Any], path: Path) -> tuple[Any, Any, Any]:
    client = await daemons.start(settings)
    info = await call(client, "pi/openSession", {"path": str(path)})
    context = await call(client, "pi/getContext", {"sessionId": info["sessionId"]})
    return client, info, context


async def test_the_leaf_s_context_comes_first_then_the_whole_file(daemons: Daemons, long_session: Path) -> None:
    whole, info, context = await opened(daemons, WHOLE_FILE, long_session)
    assert info["loading"] is False and info["warnings"]
    client, early, early_context = await opened(daemons, TAIL_FIRST, long_session)
    assert early["loading"] is True and early["warnings"] == []
    assert early["leafId"] == info["leafId"] and early["header"] == info["header"]
    assert 0 < early["entryCount"] < info["entryCount"]  # only the end was read
    assert early_context == context
    loaded = await wait_event(client, "pi/sessionLoaded")
    assert loaded == {"sessionId": early["sessionId"], "leafId": info["leafId"], "entryCount": info["entryCount"],
                      "warnings": info["warnings"], "contextChanged": False}
    assert events(client, "pi/sessionChanged") == []
    sid = early["sessionId"]
    assert await call(client, "pi/openSession", {"path": str(long_session)}) == info  # now the whole file's
    for method, params in (("pi/getTree", {"limit": 50}), ("pi/getStats", {}), ("pi/getContext", {})):
        assert await call(client, method, {"sessionId": sid, **params}) == await call(
            whole, method, {"sessionId": sid, **params}), method


async def test_other_requests_wait_for_the_whole_file(daemons: Daemons, long_session: Path) -> None:
    whole = await daemons.start(WHOLE_FILE)
    sid = (await call(whole, "pi/openSession", {"path": str(long_session)}))["sessionId"]
    tree = await call(whole, "pi/getTree", {"sessionId": sid, "offset": 1000, "limit": 20})
    stats = await call(whole, "pi/getStats", {"sessionId": sid})
    client = await daemons.start(TAIL_FIRST)
    assert (await call(client, "pi/openSession", {"path": str(long_session)}))["loading"] is True
    assert await call(client, "pi/getTree", {"sessionId": sid, "offset": 1000, "limit": 20}) == tree
    assert await call(client, "pi/getStats", {"sessionId": sid}) == stats
    leaf = stats and (await call(client, "pi/getTree", {"sessionId": sid, "limit": 0}))["leafId"]
    appended = await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("after the open")]})
    entry = (await call(client, "pi/getEntries", {"sessionId": sid, "ids": appended["ids"]}))["entries"][0]
    assert entry["parentId"] == leaf
    assert (await wait_event(client, "pi/sessionLoaded"))["contextChanged"] is False


def abandoned_thinking_change(path: Path) -> Path:
    """The newest thinking change is on a branch the path left: the one level the tail guesses wrong."""
    lines = [thinking("t0", None, "low"), *chain(200, parent="t0")]
    fork_point = lines[100]["id"]
    lines += [thinking("t1", lines[-1]["id"], "high"), *chain(5, 500, "t1")]
    lines += chain(300, 1000, fork_point)
    lines += [compaction("c1", lines[-1]["id"], lines[-10]["id"]), *chain(20, 2000, "c1")]
    return write_lines(path, lines)


async def test_a_context_guessed_wrong_is_corrected_once_the_whole_file_is_read(daemons: Daemons,
                                                                                tmp_path: Path) -> None:
    """Whether the early answer came before the background read depends on the machine's load, so this
    checks the rule either way; ``tests/unit/service/test_loading.py`` holds the read back to check the guess."""
    path = abandoned_thinking_change(tmp_path / "s.jsonl")
    _, info, context = await opened(daemons, WHOLE_FILE, path)
    client, early, early_context = await opened(daemons, TAIL_FIRST, path)
    assert context["thinkingLevel"] == "low" and early_context["thinkingLevel"] in ("high", "low")
    guessed_wrong = early_context != context
    loaded = await wait_event(client, "pi/sessionLoaded")
    assert loaded["contextChanged"] is guessed_wrong
    if guessed_wrong:
        changed = await wait_event(client, "pi/sessionChanged")
        assert changed == {"sessionId": early["sessionId"], "leafId": info["leafId"], "reason": "loaded"}
    else:
        assert events(client, "pi/sessionChanged") == []
    assert await call(client, "pi/getContext", {"sessionId": early["sessionId"]}) == context


def test_the_command_line_reads_whole_files_and_prints_every_warning(tmp_path: Path) -> None:
    """A file over the default ``daemon.tailOpenBytes`` (32 MiB): the one-shot command line has no client to
    tell warnings found later, so it reads the whole file first and prints them with the context."""
    path = tmp_path / "big.jsonl"
    write(path, generate(seed=9, entries=30_000, shape="long", compaction_every=2000))
    lines = path.read_bytes().splitlines(keepends=True)
    lines.insert(1000, b"{broken\n")
    path.write_bytes(b"".join(lines))
    assert path.stat().st_size >= 32 << 20
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "context", str(path), "--json"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert f"{path}:1001: warning:" in done.stderr
    assert json.loads(done.stdout)["messages"]

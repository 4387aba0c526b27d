"""Two daemon runs on a 30k-line session: the second opens it through the open index and reads far fewer bytes.

The daemons read whole files (``daemon.tailOpenBytes: 0``): the file is over
32 MiB, which would otherwise open tail-first (``tests/e2e/test_tail_open.py``).

Bytes are counted by the daemon itself (``debug/stats`` ``openIndex``: bytes read
by session opens and the entries made from the file), never timed. The second
run's context must equal the first's, also after another program appended lines
between the runs; a file rewritten under the index is read in full again.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.stdio_daemon import Daemon, daemon

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.jsonio.jsontext import dumps

ENTRIES = 30_000
DEADLINE = 120.0


@pytest.fixture(scope="module")
def big_session(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("big") / "big.jsonl"
    write(path, generate(seed=5, entries=ENTRIES, shape="long", compaction_every=2000))
    return path


def stats(d: Daemon) -> dict[str, int]:
    return dict(d.ok("debug/stats", {})["openIndex"])


def open_and_context(path: Path, env: dict[str, str], *, wait_for_save: bool) -> tuple[Any, dict[str, int]]:
    """One daemon run: open ``path``, its context, (the index saved), and the open-index counters."""
    with daemon(env=env, init=False) as d:
        d.ok("initialize", {"processId": None, "rootUri": None, "capabilities": {},  # whole-file opens only
                            "initializationOptions": {"settings": {"daemon": {"tailOpenBytes": 0}}}})
        sid = d.ok("pi/openSession", {"path": str(path)})["sessionId"]
        context = d.ok("pi/getContext", {"sessionId": sid})
        deadline = time.monotonic() + DEADLINE
        while wait_for_save and stats(d)["indexSaves"] < 1:  # the index is written in the background
            assert time.monotonic() < deadline, d.log()
            time.sleep(0.05)
        return context, stats(d)


def test_a_second_daemon_reopens_through_the_index(big_session: Path, tmp_path: Path) -> None:
    env = {"PI_SESSIOND_DEBUG_METHODS": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    size = big_session.stat().st_size
    first, cold = open_and_context(big_session, env, wait_for_save=True)
    assert cold["indexHits"] == 0 and cold["bytesRead"] >= size
    (saved,) = (tmp_path / "cache" / "pi-sessiond" / "open-index").iterdir()
    assert saved.stat().st_mode & 0o777 == 0o600
    second, warm = open_and_context(big_session, env, wait_for_save=False)
    assert warm["indexHits"] == 1 and warm["indexSaves"] == 0
    assert warm["bytesRead"] < size // 5, (warm, size)  # the compaction's kept entries, not the whole file
    assert second == first

    with open(big_session, "ab") as fh:  # another writer continues the branch between the runs
        last = big_session.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[1]
        leaf = last.split(b'"id":"', 1)[1].split(b'"', 1)[0].decode()
        fh.write(dumps({"type": "message", "id": "zz000001", "parentId": leaf, "timestamp": "2026-02-01T00:00:00.000Z",
                        "message": {"role": "user", "content": "appended", "timestamp": 1}}) + b"\n")
    third, appended = open_and_context(big_session, env, wait_for_save=False)
    assert appended["indexHits"] == 1 and appended["bytesRead"] < size // 5
    assert third["messages"][:-1] == first["messages"] and third["messages"][-1]["content"] == "appended"


def test_a_rewritten_file_or_the_setting_off_reads_everything(big_session: Path, tmp_path: Path) -> None:
    env = {"PI_SESSIOND_DEBUG_METHODS": "1", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(big_session.read_bytes())
    first, _ = open_and_context(copy, env, wait_for_save=True)
    replaced = tmp_path / "replaced.jsonl"
    replaced.write_bytes(copy.read_bytes())
    os.replace(replaced, copy)  # the same bytes under another inode (a rewrite, a fork's copy)
    second, cold = open_and_context(copy, env, wait_for_save=True)
    assert cold["indexHits"] == 0 and cold["bytesRead"] >= copy.stat().st_size
    assert second == first
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text('{"daemon": {"openIndex": false}}')
    off, counts = open_and_context(copy, {**env, "PI_CODING_AGENT_DIR": str(agent)}, wait_for_save=False)
    assert counts["indexHits"] == 0 and counts["indexSaves"] == 0 and off == first

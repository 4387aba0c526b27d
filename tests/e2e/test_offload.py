"""Heavy calls run off the event loop and the session state stays consistent.

No wall-clock asserts (latency goals are in ``bench/bench_offload.py``): the
tests check *order* — a small request sent after a heavy one is answered
first — and *consistency* — one file is opened once however many opens race,
requests pipelined behind an open wait for it, an append waits for a tree of
its session being built.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tests.e2e.daemon_client import generated
from tests.e2e.stdio_daemon import daemon

BIG_LINES = 150_000  # ~1.5 s to open on a quiet machine; small requests take milliseconds


def big_session(path: Path, lines: int = BIG_LINES) -> Path:
    """A linear session of ``lines`` short user/assistant messages."""
    header = {"type": "session", "version": 3, "id": "big", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}
    out = [json.dumps(header)]
    parent = None
    for i in range(lines):
        eid = f"{i:08x}"
        text = f"message {i}"
        message: dict[str, Any] = ({"role": "user", "content": text, "timestamp": i} if i % 2 == 0 else
                                   {"role": "assistant", "content": [{"type": "text", "text": text}], "timestamp": i})
        out.append(json.dumps({"type": "message", "id": eid, "parentId": parent,
                               "timestamp": "2026-01-01T00:00:01.000Z", "message": message}, separators=(",", ":")))
        parent = eid
    path.write_text("\n".join(out) + "\n")
    return path


def test_a_small_session_is_served_while_a_big_file_opens(tmp_path: Path) -> None:
    big = big_session(tmp_path / "big.jsonl")
    small = generated(tmp_path / "small.jsonl", entries=20)
    with daemon() as d:
        sid = d.ok("pi/openSession", {"path": str(small)})["sessionId"]
        heavy = d.send("pi/openSession", {"path": str(big)})
        light = [d.send("pi/getContext", {"sessionId": sid}) for _ in range(3)]
        order = [d.recv()["id"] for _ in range(4)]
        assert order == [*light, heavy]  # the loop kept serving while the big file was read


def test_two_opens_of_one_file_racing_give_one_session(tmp_path: Path) -> None:
    big = big_session(tmp_path / "big.jsonl", 30_000)
    link = tmp_path / "link.jsonl"
    link.symlink_to(big)
    with daemon() as d:
        first = d.send("pi/openSession", {"path": str(big)})
        second = d.send("pi/openSession", {"path": str(link)})
        third = d.send("pi/openSession", {"sessionId": "big"})
        replies = {r["id"]: r for r in (d.recv(), d.recv(), d.recv())}
        ids = {replies[i]["result"]["sessionId"] for i in (first, second, third)}
        assert ids == {"big"}  # never "big#2": the file was loaded once


def test_requests_pipelined_behind_an_open_wait_for_it(tmp_path: Path) -> None:
    big = big_session(tmp_path / "big.jsonl", 30_000)
    with daemon() as d:
        opening = d.send("pi/openSession", {"path": str(big)})
        tree = d.send("pi/getTree", {"sessionId": "big", "limit": 1})
        append = d.send("pi/append", {"sessionId": "big", "entries": [
            {"type": "message", "message": {"role": "user", "content": "after the open", "timestamp": 1}}]})
        context = d.send("pi/getContext", {"sessionId": "big"})
        replies = {r["id"]: r for r in (d.recv(), d.recv(), d.recv(), d.recv())}
        assert all("result" in replies[i] for i in (opening, tree, append, context)), replies
        assert replies[tree]["result"]["total"] == 30_000  # the tree was read before the append (arrival order)
        assert replies[context]["result"]["messages"][-1]["content"] == "after the open"


def _children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Linux ``/proc``)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def test_an_offline_compaction_is_summarized_in_a_worker_process_while_reads_are_served(tmp_path: Path) -> None:
    big = generated(tmp_path / "big.jsonl", entries=6000, seed=3)  # ~7 MB: a summary of a second or more
    small = generated(tmp_path / "small.jsonl", entries=20)
    with daemon() as d:
        sid = d.ok("pi/openSession", {"path": str(small)})["sessionId"]
        bid = d.ok("pi/openSession", {"path": str(big)})["sessionId"]
        d.ok("pi/getContext", {"sessionId": bid})
        assert _children(d.proc.pid) == []
        heavy = d.send("pi/compact", {"sessionId": bid})
        light = [d.send("pi/getContext", {"sessionId": sid}) for _ in range(3)]
        replies = [d.recv() for _ in range(4)]
        assert [r["id"] for r in replies] == [*light, heavy]  # the loop kept serving while the summary was built
        assert replies[-1]["result"]["entry"]["type"] == "compaction"
        workers = _children(d.proc.pid)
        assert workers, "the offline summary ran in the daemon's own process"
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{pid}").exists() for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(Path(f"/proc/{pid}").exists() for pid in workers), "a worker outlived the killed daemon"


def test_a_clean_exit_after_an_offline_compaction_logs_no_traceback(tmp_path: Path) -> None:
    """``shutdown`` + ``exit`` on stdio stops the summary worker processes while the interpreter is whole."""
    session = generated(tmp_path / "s.jsonl", entries=300, seed=4)
    with daemon() as d:
        sid = d.ok("pi/openSession", {"path": str(session)})["sessionId"]
        assert d.ok("pi/compact", {"sessionId": sid})["entry"]["type"] == "compaction"
        assert _children(d.proc.pid), "the offline summary ran in the daemon's own process"
        d.ok("shutdown", None)
        body = b'{"jsonrpc":"2.0","method":"exit"}'
        assert d.proc.stdin is not None
        d.proc.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        d.proc.stdin.close()
        assert d.proc.wait(60) == 0
        assert "Traceback" not in d.log() and "Error" not in d.log(), d.log()

"""A Pi-style second writer: appends turns to a session file without any lock, as a running Pi does.

Each entry is one line written with one ``write`` (Pi's ``appendFileSync``),
parented on the file's last entry at that moment, with the current time as
its timestamp: user and assistant messages alternate, the assistant's with a
small usage block. Used by the live-writer tests (as a thread) and by the
soak (``python -m tests.soak.live_writer FILE --rate 20 --seconds 60`` prints
the ids it wrote, one per line with ``1`` if it raced, to ``--ids``).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def now_iso() -> str:
    moment = datetime.now(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def last_entry_id(path: Path) -> str | None:
    """The id of the file's last complete entry line (the header has none)."""
    size = path.stat().st_size
    window = 4096
    while True:
        with open(path, "rb") as fh:
            fh.seek(max(0, size - window))
            chunk = fh.read(size - max(0, size - window))
        lines = chunk.split(b"\n")
        complete = lines[:-1] if not chunk.endswith(b"\n") else lines
        candidates = [raw for raw in complete if raw.strip()]
        if size - window > 0:
            candidates = candidates[1:]  # the first may be cut by the window
        for raw in reversed(candidates):
            try:
                data = json.loads(raw)
            except ValueError:
                continue
            if isinstance(data, dict) and isinstance(data.get("id"), str) and data.get("type") != "session":
                return str(data["id"])
        if window >= size:
            return None
        window *= 4


def pi_entry(n: int, tag: str, parent: str | None) -> dict[str, Any]:
    """Turn ``n``'s entry: a user message for even ``n``, an assistant answer for odd ``n``."""
    eid = f"{tag}{n:06d}"
    stamp = int(time.time() * 1000)
    if n % 2 == 0:
        message: dict[str, Any] = {"role": "user", "content": f"[{tag}] request {n}: look at file_{n}.py",
                                   "timestamp": stamp}
    else:
        message = {"role": "assistant", "content": [{"type": "text", "text": f"[{tag}] done with step {n}."}],
                   "api": "openai-completions", "provider": "loopback", "model": "loopback",
                   "usage": {"input": 100 + n, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120 + n,
                             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                   "stopReason": "stop", "timestamp": stamp}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": now_iso(), "message": message}


def append_one(path: Path, n: int, tag: str) -> tuple[str, bool]:
    """Append entry ``n`` on the file's last entry, in one write; returns its id and whether it raced.

    It raced when another line landed between reading the last entry and the
    write (the line before ours is not our parent): a fork made by this
    writer, as any lock-free writer can make, reported apart by the soak.
    """
    parent = last_entry_id(path)
    entry = pi_entry(n, tag, parent)
    data = json.dumps(entry, separators=(",", ":")).encode() + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, data)
        start = os.lseek(fd, 0, os.SEEK_CUR) - len(data)
    finally:
        os.close(fd)
    return str(entry["id"]), id_before(path, start) != parent


def id_before(path: Path, offset: int) -> str | None:
    """The id of the entry on the line that ends at ``offset``."""
    window = 4096
    while True:
        begin = max(0, offset - window)
        with open(path, "rb") as fh:
            fh.seek(begin)
            chunk = fh.read(offset - begin)
        cut = chunk.rstrip(b"\n").rfind(b"\n")
        if cut >= 0 or begin == 0:
            try:
                data = json.loads(chunk[cut + 1 :])
            except ValueError:
                return None
            return data.get("id") if isinstance(data, dict) and data.get("type") != "session" else None
        window *= 4


class PiStyleWriter(threading.Thread):
    """Appends ``count`` entries at ``rate`` per second in a thread; ``ids`` are those written."""

    def __init__(self, path: Path, *, count: int, rate: float, tag: str = "pi") -> None:
        super().__init__(daemon=True)
        self.path, self.count, self.rate, self.tag = path, count, rate, tag
        self.ids: list[str] = []
        self.raced: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            write_at_rate(self.path, self.count, self.rate, self.tag, self._record)
        except BaseException as exc:  # reported by the test through .error
            self.error = exc

    def _record(self, eid: str, raced: bool) -> None:
        self.ids.append(eid)
        if raced:
            self.raced.append(eid)


def write_at_rate(path: Path, count: int, rate: float, tag: str, on_id: Any) -> None:
    """Append ``count`` entries, one every ``1/rate`` seconds (on a fixed schedule, not drifting)."""
    start = time.monotonic()
    for n in range(count):
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        on_id(*append_one(path, n, tag))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file", type=Path)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--tag", default="pi")
    parser.add_argument("--ids", type=Path, required=True)
    args = parser.parse_args()
    with open(args.ids, "w", encoding="utf-8") as out:
        def record(eid: str, raced: bool) -> None:
            out.write(f"{eid} {int(raced)}\n")
            out.flush()

        write_at_rate(args.file, int(args.rate * args.seconds), args.rate, args.tag, record)


if __name__ == "__main__":
    main()

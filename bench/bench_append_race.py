"""How often a line of another writer lands between an append's size check and its write.

A Pi without our extension appends to its session file without a lock. The
store appends only when the file has the size it last read
(``files.append_bytes(expect_size=…)``): if the other writer's line landed
first, it folds that line in and builds its entries again, on the new last
entry. A line that lands *between* the check and the write cannot be caught:
ours follows it with a stale parent, and the other writer's turn ends on a side
branch. This bench measures that window: another process appends a line every
``--every`` seconds, while this one appends with ``expect_size`` in a loop and
``--busy`` threads parse JSON (as a daemon's threads do while a summary streams
in). It counts the appends that found the file grown before the check (nothing
written, built again: harmless) and those that slipped (the window).

Usage: ``python bench/bench_append_race.py [--seconds 15] [--busy 1] [--every 0.0005]``
(``PYTHONPATH=<other checkout>/server:<other checkout>/protocol`` measures another version.)
Goal: with a busy thread, the slipped share no higher than with none (the GIL is not the window).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from pi_sessiond.store import files

WRITER = """
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
every, end = float(sys.argv[2]), time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    os.write(fd, b'{"writer":"other"}' + b" " * 80 + b"\\n")
    time.sleep(every)
"""


def run(seconds: float, busy: int, every: float, workdir: Path) -> dict[str, int]:
    path = workdir / "race.jsonl"
    path.write_bytes(b"")
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(every), str(seconds + 5)])
    stop = threading.Event()
    blob = orjson.dumps([{"text": "b" * 50, "n": i} for i in range(2000)])

    def parse() -> None:
        while not stop.is_set():
            orjson.loads(blob)
            sum(len(str(n)) for n in range(2000))  # pure Python too: it holds the GIL between switches

    threads = [threading.Thread(target=parse, daemon=True) for _ in range(busy)]
    for thread in threads:
        thread.start()
    counts = {"landed": 0, "grown_before_check": 0, "slipped": 0}
    line = b'{"writer":"us"}' + b" " * 83 + b"\n"
    end = time.monotonic() + seconds
    try:
        while time.monotonic() < end:
            size = os.stat(path).st_size
            start = files.append_bytes(path, line, fsync=False, expect_size=size)
            counts["grown_before_check" if start is None else "slipped" if start != size else "landed"] += 1
    finally:
        stop.set()
        writer.kill()
        writer.wait()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--busy", type=int, default=1, help="threads parsing JSON beside the appends")
    parser.add_argument("--every", type=float, default=0.0005, help="seconds between the other writer's lines")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        counts = run(args.seconds, args.busy, args.every, Path(tmp))
    tries = sum(counts.values())
    print(f"$ python bench/bench_append_race.py --seconds {args.seconds:g} --busy {args.busy} --every {args.every:g}")
    print(f"# {files.__file__}")
    print(f"appends tried {tries}: landed {counts['landed']}, found the file grown before the check "
          f"{counts['grown_before_check']}, slipped between the check and the write {counts['slipped']} "
          f"({100 * counts['slipped'] / max(1, tries):.2f}% of the tries)")


if __name__ == "__main__":
    main()

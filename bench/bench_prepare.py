"""prepareCompaction benchmark: pi-sessiond vs Pi 1.6.0 (the parity target) on the same generated files.

    .venv/bin/python bench/bench_prepare.py                 # 1k and 10k entries
    .venv/bin/python bench/bench_prepare.py --full          # + 100k
    .venv/bin/python bench/bench_prepare.py --sizes 1000 --calls 9 --repeat 5 --json bench/out/p.json

Same files and process model as bench/bench_store.py (whose helpers it imports):
every measurement runs in a fresh subprocess (ours: this script with ``--worker``;
Pi: ``node bench/pi_prepare_bench.mjs``), which opens the file once and then
prepares a compaction of the leaf's path ``--calls`` times with the default
settings, timing the path lookup and the prepare call apart. The first call is
reported on its own (ours parses message bodies lazily, so our first call
includes that JSON parsing); the other calls give a median. With ``--repeat N``
each pair of processes runs N times and every number is the median over the
processes. Between two calls both sides append one user message (``APPENDED``,
untimed) under the leaf, so every later call prepares a path it has not seen:
a cache of an unchanged input cannot pass the goal, only work kept up to date
per append can. Metrics: see bench/README.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_store import ROOT, SHAPES, build_file, fmt, median_of

HERE = Path(__file__).resolve().parent
PI_SCRIPT = HERE / "pi_prepare_bench.mjs"
PI_PACKAGE = ROOT / "tests" / "parity" / "node_modules" / "@earendil-works" / "pi-coding-agent"
SETTINGS = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}

# (key, label, unit); the target depends on the shape (TARGETS)
METRICS = (
    ("path_ms", "path lookup, median", "ms"),
    ("prepare_first_ms", "prepare, first call", "ms"),
    ("prepare_ms", "prepare after an append, median", "ms"),
    ("prepare_serialize_first_ms", "prepare + serialize, first call", "ms"),
    ("prepare_serialize_ms", "prepare + serialize after an append, median", "ms"),
)
TARGETS = {"linear": 0.2, "long": 0.05}  # ours/Pi for the prepare rows
# Appended between two calls on both sides (pi_prepare_bench.mjs appends the same message).
APPENDED = {"role": "user", "content": "Go on with the next step and keep the tests green.", "timestamp": 0}
# What both sides must agree on, so that they did the same work.
CHECKED = ("firstKeptEntryId", "messagesToSummarize", "turnPrefixMessages", "isSplitTurn", "tokensBefore",
           "serializedSha1")


# --------------------------------------------------------------------- worker
def worker(path: Path, calls: int) -> None:
    """Our side, in a fresh interpreter: print one JSON line (times in ms)."""
    from pi_sessiond.compaction.convert import convert_to_llm
    from pi_sessiond.compaction.prepare import prepare_compaction
    from pi_sessiond.compaction.serialize import serialize_conversation
    from pi_sessiond.compaction.tokens import CompactionSettings
    from pi_sessiond.store.session import Session

    settings = CompactionSettings(enabled=SETTINGS["enabled"], reserve_tokens=SETTINGS["reserveTokens"],
                                  keep_recent_tokens=SETTINGS["keepRecentTokens"])
    t = time.perf_counter()
    session = Session.open(path)
    open_ms = (time.perf_counter() - t) * 1e3
    session.path = None  # in-memory only: the appends between calls write nothing

    path_ms: list[float] = []
    prepare_ms: list[float] = []
    serialize_ms: list[float] = []
    prep = None
    text: str | None = None
    path_length = 0
    for call in range(calls):
        if call:  # a new message under the leaf before every later call (untimed)
            session.append([{"type": "message", "message": dict(APPENDED)}])
        t0 = time.perf_counter()
        entries = session.path_to()
        t1 = time.perf_counter()
        # As the daemon runs it: on the session's incrementally kept projection
        # (built on the first call, then kept up to date by appends).
        prep = prepare_compaction(entries, settings, session.projection())
        t2 = time.perf_counter()
        text = serialize_conversation(convert_to_llm(prep.messages_to_summarize)) if prep else None
        t3 = time.perf_counter()
        path_ms.append((t1 - t0) * 1e3)
        prepare_ms.append((t2 - t1) * 1e3)  # prepare_compaction only (path_to is path_ms)
        serialize_ms.append((t3 - t2) * 1e3)
        path_length = len(entries)
    both = [p + s for p, s in zip(prepare_ms, serialize_ms, strict=True)]
    print(json.dumps({
        "impl": "ours",
        "entries": len(session.entries),
        "pathLength": path_length,
        "firstKeptEntryId": prep.first_kept_entry_id if prep else None,
        "messagesToSummarize": len(prep.messages_to_summarize) if prep else None,
        "turnPrefixMessages": len(prep.turn_prefix_messages) if prep else None,
        "isSplitTurn": prep.is_split_turn if prep else None,
        "tokensBefore": prep.tokens_before if prep else None,
        "serializedSha1": None if text is None else hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest(),
        "calls": calls,
        "open_ms": open_ms,
        "path_first_ms": path_ms[0],
        "path_ms": statistics.median(path_ms[1:]),
        "prepare_first_ms": prepare_ms[0],
        "prepare_ms": statistics.median(prepare_ms[1:]),
        "serialize_first_ms": serialize_ms[0],
        "serialize_ms": statistics.median(serialize_ms[1:]),
        "prepare_serialize_first_ms": both[0],
        "prepare_serialize_ms": statistics.median(both[1:]),
        "per_call": {"path_ms": path_ms, "prepare_ms": prepare_ms, "serialize_ms": serialize_ms},
    }))


# --------------------------------------------------------------------- driver
def run_child(argv: list[str]) -> dict[str, Any]:
    """Run one measuring process; return its JSON line."""
    proc = subprocess.run(argv, capture_output=True, cwd=ROOT, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({proc.returncode}):\n{proc.stderr.decode()}")
    result: dict[str, Any] = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    return result


def measure(path: Path, calls: int, repeat: int) -> tuple[dict[str, Any], dict[str, Any]]:
    ours_argv = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path), str(calls)]
    pi_argv = ["node", str(PI_SCRIPT), str(path), str(calls)]
    ours, pi = [], []
    for _ in range(repeat):  # interleaved, so drift hits both sides alike
        ours.append(run_child(ours_argv))
        pi.append(run_child(pi_argv))
    return median_of(ours), median_of(pi)


def disagreements(ours: dict[str, Any], pi: dict[str, Any]) -> list[str]:
    """Checked fields that differ between the sides or between runs of one side."""
    bad = []
    for key in CHECKED:
        values = {json.dumps(run[key]) for side in (ours, pi) for run in side["runs"]}
        if len(values) != 1:
            bad.append(f"{key}: ours {ours[key]!r} vs Pi {pi[key]!r}")
    return bad


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| shape | entries | MB | metric | ours | Pi | ours/Pi | target | same work |",
             "|---|---:|---:|---|---:|---:|---:|---|:---:|"]
    for row in rows:
        agree = "✗" if row["disagreements"] else "✓"
        for key, label, unit in METRICS:
            a, b = row["ours"].get(key), row["pi"].get(key)
            ratio = f"{a / b:.2f}" if a is not None and b else "-"
            limit = TARGETS[row["shape"]]
            target = f"<= {limit}x Pi" if key in ("prepare_first_ms", "prepare_ms") else ""
            if target and a is not None and b:
                target += " ✓" if a <= limit * b else " ✗"
            lines.append(f"| {row['shape']} | {row['entries']} | {row['mb']:.1f} | {label} ({unit}) "
                         f"| {fmt(a)} | {fmt(b)} | {ratio} | {target} | {agree} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated entry counts (default 1000,10000)")
    parser.add_argument("--full", action="store_true", help="also 100000 entries")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: linear,long")
    parser.add_argument("--calls", type=int, default=5,
                        help="prepare calls per process: the first + a median of the rest (default 5, min 2)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh process pairs per file; medians (default 3)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write all results as JSON")
    parser.add_argument("--worker", nargs=2, metavar=("FILE", "CALLS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(Path(args.worker[0]), max(2, int(args.worker[1])))
        return 0

    if shutil.which("node") is None or not (PI_PACKAGE / "package.json").exists():
        parser.error("needs node and Pi: run `npm ci --prefix tests/parity` first")
    if args.calls < 2:
        parser.error("--calls must be at least 2 (the first call is reported on its own)")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.full and 100_000 not in sizes:
        sizes.append(100_000)
    shapes = [s for s in args.shapes.split(",") if s]
    if unknown := set(shapes) - set(SHAPES):
        parser.error(f"unknown shapes: {sorted(unknown)}")

    command = shlex.join([".venv/bin/python", "bench/bench_prepare.py", *(sys.argv[1:] if argv is None else argv)])
    pi_version = json.loads((PI_PACKAGE / "package.json").read_text())["version"]
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    env = (f"python {platform.python_version()}, node {node_version}, Pi {pi_version}, "
           f"{platform.machine()} {os.cpu_count()} cpus")
    print(f"$ {command}")
    print(f"# {env}; calls={args.calls}, repeat={args.repeat} (medians)")
    print(f"# settings {json.dumps(SETTINGS)}; path lookup = session.path_to() / sm.getBranch(); "
          "prepare = prepare_compaction(path) / prepareCompaction(path) alone; "
          "serialize = serialize_conversation(convert_to_llm(messages to summarize)) / same in Pi")

    rows: list[dict[str, Any]] = []
    for entries in sizes:
        for shape in shapes:
            path = build_file(shape, entries)
            ours, pi = measure(path, args.calls, args.repeat)
            bad = disagreements(ours, pi)
            for line in bad:
                print(f"# MISMATCH {path.name}: {line}", file=sys.stderr)
            rows.append({"shape": shape, "entries": ours["entries"], "file": str(path.relative_to(ROOT)),
                         "mb": path.stat().st_size / 1e6, "disagreements": bad, "ours": ours, "pi": pi})
            print(f"# done {path.name}", file=sys.stderr, flush=True)

    print(table(rows))
    checks = ", ".join(f"{r['shape']}-{r['entries']}: firstKept {r['ours']['firstKeptEntryId']}, "
                       f"{r['ours']['messagesToSummarize']} to summarize" for r in rows)
    print(f"# same work (✓ = equal {', '.join(CHECKED)} on both sides and in every run): {checks}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command, "env": env, "settings": SETTINGS,
                                         "calls": args.calls, "repeat": args.repeat, "results": rows},
                                        indent=2) + "\n")
    return 1 if any(r["disagreements"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

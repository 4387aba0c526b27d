"""Session-store benchmark: pi-sessiond vs Pi 1.6.0 on the same generated files.

    .venv/bin/python bench/bench_store.py                 # 1k and 10k entries
    .venv/bin/python bench/bench_store.py --full          # + 100k
    .venv/bin/python bench/bench_store.py --sizes 1000 --repeat 5 --json bench/out/r.json

Files come from ``pi_sessiond.examples.generator`` (shapes ``linear`` and ``long``,
the latter with a compaction every 2000 entries), written once to ``bench/out/``.
Every measurement runs in its own fresh subprocess (ours: this script with
``--worker``; Pi: ``node bench/pi_store_bench.mjs``), so the peak RSS reported is
that one process's ``ru_maxrss`` (from ``os.wait4``). With ``--repeat N`` each pair
of processes runs N times and every number is the median. Metrics: see bench/README.md.
"""

from __future__ import annotations

import argparse
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "out"
PI_SCRIPT = HERE / "pi_store_bench.mjs"
PI_PACKAGE = ROOT / "tests" / "parity" / "node_modules" / "@earendil-works" / "pi-coding-agent"
SHAPES = ("linear", "long")
COMPACTION_EVERY = 2_000
USER_ENTRY = {"type": "message", "message": {"role": "user", "content": "x", "timestamp": 0}}

# (key, label, unit, target as text)
METRICS = (
    ("open_ms", "open", "ms", "ours <= 0.2x Pi"),
    ("context_ms", "context (fresh open)", "ms", ""),
    ("open_context_ms", "open + context", "ms", ""),
    ("append_ctx_mean_ms", "append+context, mean/op", "ms", "<= 1 ms on both"),
    ("append_ctx_max_ms", "append+context, max/op", "ms", ""),
    ("append_edit_ctx_mean_ms", "append+context_edit+context, mean/op", "ms", "<= 1 ms"),
    ("append_edit_ctx_p50_ms", "append+context_edit+context, median/op", "ms", ""),
    ("append_edit_ctx_max_ms", "append+context_edit+context, max/op", "ms", ""),
    ("max_rss_mb", "peak RSS", "MB", "ours <= Pi"),
)


# --------------------------------------------------------------------- worker
def worker(path: Path, iterations: int) -> None:
    """Our side, in a fresh interpreter: print one JSON line (times in ms)."""
    import resource

    from pi_sessiond.store.session import Session

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t = time.perf_counter()
    session = Session.open(path)
    open_ms = (time.perf_counter() - t) * 1e3

    t = time.perf_counter()
    ctx = session.context()
    context_ms = (time.perf_counter() - t) * 1e3
    entries = len(session.entries)

    session.path = None  # in-memory only: no disk writes on append
    per_op: list[float] = []
    last = 0
    for _ in range(iterations):
        t = time.perf_counter()
        session.append([USER_ENTRY])
        last = len(session.context().messages)
        per_op.append((time.perf_counter() - t) * 1e3)
    edit_op: list[float] = []
    edit_count = 0
    for i in range(iterations):
        t = time.perf_counter()
        [added] = session.append([USER_ENTRY])
        replacement = None if i % 2 else {"content": "edited"}
        session.append([{"type": "context_edit", "targetId": added.id, "replacement": replacement}])
        edit_count = len(session.context().messages)
        edit_op.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({
        "impl": "ours",
        "edit_messages": edit_count,
        "append_edit_ctx_mean_ms": statistics.fmean(edit_op) if edit_op else None,
        "append_edit_ctx_p50_ms": statistics.median(edit_op) if edit_op else None,
        "append_edit_ctx_max_ms": max(edit_op) if edit_op else None,
        "entries": entries,
        "contextMessages": len(ctx.messages),
        "finalMessages": last,
        "open_ms": open_ms,
        "context_ms": context_ms,
        "append_ctx_mean_ms": statistics.fmean(per_op) if per_op else None,
        "append_ctx_p50_ms": statistics.median(per_op) if per_op else None,
        "append_ctx_max_ms": max(per_op) if per_op else None,
        "max_rss_before_open_kb": rss_before,
        "max_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        "writes": "none (session.path = None after open)",
    }))


# --------------------------------------------------------------------- driver
def build_file(shape: str, entries: int) -> Path:
    """The cached session file for (shape, entries); generated on first use."""
    from pi_sessiond.examples.generator import write_stream

    OUT.mkdir(exist_ok=True)
    path = OUT / f"{shape}-{entries}.jsonl"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        t = time.perf_counter()
        write_stream(tmp, seed=0, entries=entries, shape=shape, version=3,
                     compaction_every=COMPACTION_EVERY if shape == "long" else None)
        tmp.replace(path)
        print(f"# generated {path.relative_to(ROOT)} in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    return path


def run_child(argv: list[str]) -> dict[str, Any]:
    """Run one measuring process; return its JSON plus its own ru_maxrss (os.wait4)."""
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{shlex.join(argv)} failed ({proc.returncode}):\n{err.decode()}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["max_rss_mb"] = usage.ru_maxrss / 1024  # Linux: KB
    result["open_context_ms"] = result["open_ms"] + result["context_ms"]
    return result


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    merged = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            merged[key] = statistics.median(r[key] for r in runs)
    merged["runs"] = runs
    return merged


def measure(path: Path, iterations: int, repeat: int) -> tuple[dict[str, Any], dict[str, Any]]:
    ours_argv = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path), str(iterations)]
    pi_argv = ["node", str(PI_SCRIPT), str(path), str(iterations)]
    ours, pi = [], []
    for _ in range(repeat):  # interleaved, so drift hits both sides alike
        ours.append(run_child(ours_argv))
        pi.append(run_child(pi_argv))
    return median_of(ours), median_of(pi)


def fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| shape | entries | MB | metric | ours | Pi | ours/Pi | target |",
             "|---|---:|---:|---|---:|---:|---:|---|"]
    for row in rows:
        for key, label, unit, target in METRICS:
            a, b = row["ours"].get(key), row["pi"].get(key)
            ratio = f"{a / b:.2f}" if a is not None and b else "-"
            lines.append(f"| {row['shape']} | {row['entries']} | {row['mb']:.1f} | {label} ({unit}) "
                         f"| {fmt(a)} | {fmt(b)} | {ratio} | {target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated entry counts (default 1000,10000)")
    parser.add_argument("--full", action="store_true", help="also 100000 entries")
    parser.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: linear,long")
    parser.add_argument("--iterations", type=int, default=200, help="append+context operations (default 200)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh process pairs per file; medians (default 3)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write all results as JSON")
    parser.add_argument("--worker", nargs=2, metavar=("FILE", "ITERATIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.worker:
        worker(Path(args.worker[0]), int(args.worker[1]))
        return 0

    if shutil.which("node") is None or not (PI_PACKAGE / "package.json").exists():
        parser.error("needs node and Pi: run `npm ci --prefix tests/parity` first")
    sizes = [int(s) for s in args.sizes.split(",") if s]
    if args.full and 100_000 not in sizes:
        sizes.append(100_000)
    shapes = [s for s in args.shapes.split(",") if s]
    if unknown := set(shapes) - set(SHAPES):
        parser.error(f"unknown shapes: {sorted(unknown)}")

    command = shlex.join([".venv/bin/python", "bench/bench_store.py", *(sys.argv[1:] if argv is None else argv)])
    pi_version = json.loads((PI_PACKAGE / "package.json").read_text())["version"]
    node_version = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    env = (f"python {platform.python_version()}, node {node_version}, Pi {pi_version}, "
           f"{platform.machine()} {os.cpu_count()} cpus")
    print(f"$ {command}")
    print(f"# {env}; iterations={args.iterations}, repeat={args.repeat} (medians)")
    print("# writes: ours none (session.path = None after open); "
          "Pi appendFileSync to its temp copy of the file (no fsync)")

    rows: list[dict[str, Any]] = []
    for entries in sizes:
        for shape in shapes:
            path = build_file(shape, entries)
            ours, pi = measure(path, args.iterations, args.repeat)
            if any(ours[k] != pi[k] for k in ("entries", "contextMessages", "finalMessages", "edit_messages")):
                print(f"# WARNING {path.name}: ours/Pi disagree on entries or context size", file=sys.stderr)
            rows.append({"shape": shape, "entries": ours["entries"], "file": str(path.relative_to(ROOT)),
                         "mb": path.stat().st_size / 1e6, "ours": ours, "pi": pi})
            print(f"# done {path.name}", file=sys.stderr, flush=True)

    print(table(rows))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command, "env": env, "iterations": args.iterations,
                                         "repeat": args.repeat, "results": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

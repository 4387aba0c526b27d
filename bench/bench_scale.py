"""One daemon holding many sessions: opens, memory, reads during offline compactions, start time.

Parts (``--parts``, all by default):

- ``sessions``: ``--sessions`` (1,000) generated ~300-entry sessions opened one after the
  other in one daemon (``python -m pi_sessiond serve``, stdio); the median open of the first
  and last 100, the daemon's RSS after the opens and after each session had one
  ``pi/getContext`` and one ``pi/append``, those two calls' latency, and the CPU the idle
  daemon spends per second while it holds them all.
- ``stalls``: a small session's ``pi/getContext`` read again and again (one at a time) while
  8 sessions of ~5 MB compact at once with the offline summarizer, then while one of ~20 MB
  does; p50/p99/max of those reads, and the loop's own longest stall over the same time (a task
  that wakes every 5 ms and keeps the largest delay: ``debug/loopStall``).
- ``start``: spawn -> ``initialize`` answered, ours against a stock pygls server
  (``bench/stock_pygls_server.py``) started the same way, interleaved, median of ``--starts``;
  ours with the generated code an earlier start kept, and as a first start (an empty cache folder).
- ``compact-rss``: peak RSS (``ru_maxrss``) of ``pi-sessiond compact FILE`` (offline) per
  file size, against the file's size, whole and above the floor (the same command on a session
  just big enough to compact: the interpreter, asyncio and our modules, ~33 MB), and beside it
  Pi 1.6.0's peak opening the same file and serializing what it would summarize (its request
  not made: ``bench/pi_compact_peak.mjs``, when node and ``tests/parity``'s packages are there).

``BENCH_STDERR=FILE`` keeps the daemon's log; ``BENCH_SLOW=1`` prints each read above 50 ms and when it
happened. Sessions come from ``pi_sessiond.examples.generator`` (shape ``linear``) and are cached in
``bench/out/scale/`` (git-ignored).

Usage: ``python bench/bench_scale.py [--parts sessions,stalls,start,compact-rss] [--sessions 1000]``
Targets: last-100 median open <= 2x first-100; RSS after context+append <= 500 MB; reads during
compactions p99 <= 30 ms, max <= 100 ms; start no slower than stock pygls; compact peak RSS <= 4x file.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from bench_offload import LightClient, quantiles  # noqa: E402
from pi_sessiond.examples.generator import write_stream  # noqa: E402

OUT = REPO / "bench" / "out" / "scale"
BYTES_PER_ENTRY = 1140
"""About what the generator's ``linear`` shape writes per entry (to aim at a file size)."""


def cached(name: str, *, entries: int, seed: int, shape: str = "linear") -> Path:
    """A generated session file, written once into ``bench/out/scale/``."""
    path = OUT / f"{name}.jsonl"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        write_stream(tmp, seed=seed, entries=entries, shape=shape)
        tmp.replace(path)
    return path


def of_mb(mb: float, seed: int) -> Path:
    """A linear session of about ``mb`` MB."""
    return cached(f"mb{mb:g}-s{seed}", entries=int(mb * 2**20 / BYTES_PER_ENTRY), seed=seed)


def rss_mb(pid: int) -> float:
    """The current resident set of ``pid`` in MB (``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Daemon:
    """``python -m pi_sessiond serve`` on stdio with its own empty agent dir, and one client."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.proc: asyncio.subprocess.Process | None = None
        self.client: LightClient | None = None
        self.next_id = 0

    async def __aenter__(self) -> Daemon:
        agent = self.workdir / "agent"
        agent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent), "XDG_CACHE_HOME": str(self.workdir / "cache"),
               "PI_SESSIOND_DEBUG_METHODS": "1"}  # debug/loopStall
        with open(os.environ.get("BENCH_STDERR", os.devnull), "ab") as log:  # the daemon's log, when asked for
            self.proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "pi_sessiond", "serve", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=log, env=env, cwd=self.workdir, limit=2**30)
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.client = LightClient(self.proc.stdout, self.proc.stdin)
        settings = {"daemon": {"maxConcurrentSummaries": 8, **json.loads(os.environ.get("BENCH_DAEMON", "{}"))}}
        await self.call("initialize", {"capabilities": {}, "initializationOptions": {"settings": settings}})
        return self

    async def call(self, method: str, params: Any) -> Any:
        assert self.client is not None
        self.next_id += 1
        reply = await self.client.call(self.next_id, method, params)
        assert "result" in reply, str(reply)[:500]
        return reply["result"]

    async def timed(self, method: str, params: Any) -> tuple[float, Any]:
        started = time.perf_counter()
        result = await self.call(method, params)
        return (time.perf_counter() - started) * 1e3, result

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None and self.client is not None
        await self.client.close()
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


USER = {"type": "message", "message": {"role": "user", "content": "one more thing", "timestamp": 1}}


async def part_sessions(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    files = [cached(f"s300-{i:04d}", entries=300, seed=1000 + i) for i in range(args.sessions)]
    copies = workdir / "sessions"
    copies.mkdir()
    paths = [Path(shutil.copy(f, copies / f.name)) for f in files]
    async with Daemon(workdir) as daemon:
        rss_start = rss_mb(daemon.pid)
        opens, ids = [], []
        for path in paths:
            ms, result = await daemon.timed("pi/openSession", {"path": str(path)})
            opens.append(ms)
            ids.append(result["sessionId"])
        rss_open = rss_mb(daemon.pid)
        contexts, appends = [], []
        for sid in ids:
            contexts.append((await daemon.timed("pi/getContext", {"sessionId": sid}))[0])
            appends.append((await daemon.timed("pi/append", {"sessionId": sid, "entries": [USER]}))[0])
        rss_used = rss_mb(daemon.pid)
        await asyncio.sleep(1.5)
        cpu = cpu_seconds(daemon.pid)
        await asyncio.sleep(args.idle)
        idle_cpu = (cpu_seconds(daemon.pid) - cpu) / args.idle
    head, tail = statistics.median(opens[:100]), statistics.median(opens[-100:])
    return {"sessions": len(ids), "open_first100_ms": head, "open_last100_ms": tail, "open_ratio": tail / head,
            "open_total_s": sum(opens) / 1e3, "rss_start_mb": rss_start, "rss_open_mb": rss_open,
            "rss_used_mb": rss_used, "context": quantiles(contexts), "append": quantiles(appends),
            "idle_cpu_per_s": idle_cpu}


async def reads_until(daemon: Daemon, sid: str, work: asyncio.Future[Any]) -> list[float]:
    times, started = [], time.perf_counter()
    while not work.done():
        times.append((await daemon.timed("pi/getContext", {"sessionId": sid}))[0])
        if times[-1] > 50 and os.environ.get("BENCH_SLOW"):
            print(f"slow read {times[-1]:.0f} ms at {time.perf_counter() - started:.2f} s", file=sys.stderr)
    return times


async def compacting(daemon: Daemon, files: list[Path], workdir: Path) -> tuple[dict[str, float], float, list[Any]]:
    """Reads of a small session while ``files`` compact at once: their quantiles, the wall time, the results."""
    small = Path(shutil.copy(cached("small", entries=40, seed=5), workdir / f"small-{len(files)}.jsonl"))
    sid = (await daemon.call("pi/openSession", {"path": str(small)}))["sessionId"]
    await daemon.call("pi/getContext", {"sessionId": sid})
    ids = []
    for f in files:
        copy = Path(shutil.copy(f, workdir / f"c-{f.name}"))
        ids.append((await daemon.call("pi/openSession", {"path": str(copy)}))["sessionId"])
        await daemon.call("pi/getContext", {"sessionId": ids[-1]})
    await daemon.call("debug/loopStall", None)  # the loop's own watch, from here on
    started = time.perf_counter()
    work = asyncio.ensure_future(asyncio.gather(*(daemon.call("pi/compact", {"sessionId": i}) for i in ids)))
    times = await reads_until(daemon, sid, work)
    stall = await daemon.call("debug/loopStall", None)
    return {**quantiles(times), "loop_ms": stall["longestMs"]}, time.perf_counter() - started, await work


async def part_stalls(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, files in ((f"8 x {args.small_mb:g} MB", [of_mb(args.small_mb, 10 + i) for i in range(8)]),
                         (f"1 x {args.big_mb:g} MB", [of_mb(args.big_mb, 30)])):
        sub = workdir / label.replace(" ", "")
        sub.mkdir()
        async with Daemon(sub) as daemon:
            idle = [(await daemon.timed("pi/getContext", {"sessionId": (await daemon.call(
                "pi/openSession", {"path": str(cached("small", entries=40, seed=5))}))["sessionId"]}))[0]]
            q, wall, results = await compacting(daemon, files, sub)
            out[label] = {"reads": q, "wall_s": wall, "idle_ms": idle[0],
                          "tokens": [(r.get("tokensBefore"), r.get("tokensAfter")) for r in results]}
    return out


STOCK = REPO / "bench" / "stock_pygls_server.py"


INITIALIZE = b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}'
INITIALIZE_FRAME = b"Content-Length: %d\r\n\r\n%b" % (len(INITIALIZE), INITIALIZE)


def _start_once(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds from spawn to the ``initialize`` answer on stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=REPO, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE_FRAME)
    proc.stdin.flush()
    header = b""
    while not header.endswith(b"\r\n\r\n"):
        header += proc.stdout.read(1)
    length = int(header.split(b":")[1].strip().split(b"\r\n")[0])
    proc.stdout.read(length)
    elapsed = time.perf_counter() - started
    proc.kill()
    proc.wait()
    return elapsed


def part_start(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    # Both servers start from bytecode: an installed pygls has its .pyc files, an editable
    # checkout run with PYTHONDONTWRITEBYTECODE would compile ours on every start.
    for root in ("protocol", "server"):
        compileall.compile_dir(REPO / root, quiet=1)
    # Ours twice: with the generated code an earlier start kept (rpc/codecache.py; the start run to
    # its end here writes it), and as a first start, each time in an empty cache folder.
    ours_argv = [sys.executable, "-m", "pi_sessiond", "serve"]
    stock_argv = [sys.executable, str(STOCK)]
    kept_env = {**os.environ, "XDG_CACHE_HOME": str(workdir / "start-cache")}
    subprocess.run(ours_argv, input=INITIALIZE_FRAME, stdout=subprocess.DEVNULL, env=kept_env, check=True)
    ours, first, stock = [], [], []
    for n in range(args.starts):
        ours.append(_start_once(ours_argv, kept_env))
        stock.append(_start_once(stock_argv))
        first.append(_start_once(ours_argv, {**os.environ, "XDG_CACHE_HOME": str(workdir / f"start-empty-{n}")}))
    ours_s, first_s, stock_s = map(statistics.median, (ours, first, stock))
    return {"ours_s": ours_s, "first_s": first_s, "stock_s": stock_s, "ratio": ours_s / stock_s,
            "first_ratio": first_s / stock_s}


_PEAK_CHILD = """
import atexit, runpy, sys
out = sys.argv.pop(1)
def peak():
    with open("/proc/self/status") as status, open(out, "w") as fh:
        fh.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
atexit.register(peak)
runpy.run_module("pi_sessiond", run_name="__main__", alter_sys=True)
"""
"""Runs ``python -m pi_sessiond ARGS`` and writes its peak RSS (kB) to a file at exit. ``VmHWM`` is the
peak of the running program alone: ``ru_maxrss`` of a child also counts the RSS it had as a fork of this
process before it ran the program, which is the larger number once this process holds a few sessions."""


def _compact_peak(path: Path, workdir: Path) -> tuple[float, float]:
    """Peak RSS (MB) and seconds of ``pi-sessiond compact --quiet path`` (offline)."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(workdir / "agent"), "XDG_CACHE_HOME": str(workdir / "cache")}
    peak = workdir / "peak.txt"
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _PEAK_CHILD, str(peak), "compact", "--quiet", str(path)],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=workdir, check=False)
    assert proc.returncode == 0, proc.stderr
    return int(peak.read_text()) / 1024, time.perf_counter() - started


def part_compact_rss(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    # The floor: the same command on a session just big enough to compact (the interpreter, asyncio
    # with ssl, and our modules); what a file adds on top of it is what grows with the file.
    floor, _ = _compact_peak(Path(shutil.copy(cached("floor-400", entries=400, seed=1), workdir / "floor.jsonl")),
                             workdir)
    rows: dict[str, Any] = {"floor_mb": floor}
    for mb in args.rss_mb:
        original = of_mb(mb, 50)
        copy = Path(shutil.copy(original, workdir / f"rss-{mb:g}.jsonl"))
        size = copy.stat().st_size
        peak, seconds = _compact_peak(copy, workdir)
        rows[f"{mb:g}"] = {"file_mb": size / 2**20, "peak_rss_mb": peak, "ratio": peak * 2**20 / size,
                           "added_ratio": (peak - floor) * 2**20 / size, "seconds": seconds,
                           "pi_peak_mb": _pi_peak(original)}  # the copy is compacted by now
    return rows


PI_PACKAGE = REPO / "tests" / "parity" / "node_modules" / "@earendil-works" / "pi-coding-agent"


def _pi_peak(path: Path) -> float | None:
    """Pi 1.6.0's peak RSS (MB) opening ``path`` and serializing what it would summarize
    (``bench/pi_compact_peak.mjs``); ``None`` without node or Pi's package."""
    if shutil.which("node") is None or not (PI_PACKAGE / "package.json").exists():
        return None
    out = subprocess.run(["node", str(REPO / "bench" / "pi_compact_peak.mjs"), str(path)],
                         capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["peakKB"]) / 1024


def report(args: argparse.Namespace, out: dict[str, Any]) -> None:
    print(f"$ python bench/bench_scale.py --parts {','.join(args.parts)} --sessions {args.sessions} "
          f"--starts {args.starts}")
    print(f"# python {sys.version.split()[0]}, {os.cpu_count()} cpus, load average "
          + " ".join(f"{x:.1f}" for x in os.getloadavg()))
    if "sessions" in out:
        s = out["sessions"]
        print(f"\n| {s['sessions']} sessions of ~300 entries | value | target |\n|---|---:|---|")
        print(f"| median open, first 100 (ms) | {s['open_first100_ms']:.2f} | |")
        print(f"| median open, last 100 (ms) | {s['open_last100_ms']:.2f} | <= 2x first 100: "
              f"{'met' if s['open_ratio'] <= 2 else 'missed'} ({s['open_ratio']:.2f}x) |")
        print(f"| all opens (s) | {s['open_total_s']:.1f} | |")
        print(f"| RSS at start / after opens (MB) | {s['rss_start_mb']:.0f} / {s['rss_open_mb']:.0f} | |")
        print(f"| RSS after a context and an append each (MB) | {s['rss_used_mb']:.0f} | <= 500: "
              f"{'met' if s['rss_used_mb'] <= 500 else 'missed'} |")
        for name in ("context", "append"):
            q = s[name]
            print(f"| {name} p50 / p99 / max (ms) | {q['p50']:.2f} / {q['p99']:.2f} / {q['max']:.2f} | |")
        print(f"| idle daemon CPU (s per s) | {s['idle_cpu_per_s']:.4f} | near zero |")
    if "stalls" in out:
        print("\n| offline compactions running | reads | p50 ms | p99 ms | max ms | loop's longest stall ms | wall s "
              "| target |")
        print("|---|---:|---:|---:|---:|---:|---:|---|")
        for label, row in out["stalls"].items():
            q = row["reads"]
            ok = q["max"] <= 100 and (q["p99"] <= 30 or not label.startswith("8"))
            print(f"| {label} | {q['n']} | {q['p50']:.2f} | {q['p99']:.2f} | {q['max']:.2f} | {q['loop_ms']:.1f} "
                  f"| {row['wall_s']:.1f} "
                  f"| {'met' if ok else 'missed'} |")
    if "start" in out:
        s = out["start"]
        print(f"\n| start -> initialize (median of {args.starts}, interleaved) | s | / stock |\n|---|---:|---:|")
        print(f"| pi-sessiond serve | {s['ours_s']:.3f} | {s['ratio']:.2f} "
              f"({'met' if s['ratio'] <= 1 else 'missed'}: <= 1) |")
        print(f"| pi-sessiond serve, first start (no kept generated code) | {s['first_s']:.3f} | "
              f"{s['first_ratio']:.2f} |")
        print(f"| stock pygls server | {s['stock_s']:.3f} | |")
    if "compact-rss" in out:
        rows = dict(out["compact-rss"])
        floor = rows.pop("floor_mb")
        print(f"\n| offline compact (floor {floor:.0f} MB) | file MB | peak RSS MB | RSS / file "
              "| above the floor / file | s | Pi 1.6.0 to its request, MB |\n|---|---:|---:|---:|---:|---:|---:|")
        for mb, row in rows.items():
            pi = row["pi_peak_mb"]
            print(f"| {mb} MB | {row['file_mb']:.1f} | {row['peak_rss_mb']:.0f} | {row['ratio']:.1f}"
                  f"{'' if row['ratio'] <= 4 else ' (> 4)'} | {row['added_ratio']:.1f} | {row['seconds']:.1f} "
                  f"| {'n/a' if pi is None else f'{pi:.0f}'} |")


async def _run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "sessions" in args.parts:
        out["sessions"] = await part_sessions(args, workdir / "sessions-part")
    if "stalls" in args.parts:
        out["stalls"] = await part_stalls(args, workdir / "stalls-part")
    if "start" in args.parts:
        out["start"] = part_start(args, workdir)
    if "compact-rss" in args.parts:
        out["compact-rss"] = part_compact_rss(args, workdir)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", type=lambda s: s.split(","), default=["sessions", "stalls", "start", "compact-rss"])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--idle", type=float, default=5.0, help="seconds the idle daemon's CPU is measured")
    parser.add_argument("--small-mb", type=float, default=5.0)
    parser.add_argument("--big-mb", type=float, default=20.0)
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--rss-mb", type=lambda s: [float(x) for x in s.split(",")], default=[5.0, 20.0, 50.0])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for sub in ("sessions-part", "stalls-part"):
            (Path(tmp) / sub).mkdir()
        out = asyncio.run(_run(args, Path(tmp)))
    report(args, out)


if __name__ == "__main__":
    main()

"""Open + first context through the daemon vs Pi 1.6.0's SessionManager.open + buildSessionContext.

    .venv/bin/python bench/bench_open.py                      # long-100000 (~1-2 min)
    .venv/bin/python bench/bench_open.py --entries 10000 --repeat 5 --json bench/out/open.json

The file is ``bench_store.build_file("long", N)``: a compaction every 2000 entries,
so the newest compaction keeps the last ~2k entries (the context of the 100k
file is 1,660 messages). Every measurement is a fresh process:

* ours: ``python -m pi_sessiond serve`` on stdio; after ``initialize`` (not timed:
  that is the daemon's start), the time from sending ``pi/openSession`` to having
  parsed the ``pi/getContext`` reply on the client (``cli/rpcclient.py``; one
  ``pi/estimateTokens`` before it waits for the service's deferred start), i.e.
  the file read, the skeleton index, the context and both replies on the wire;
* Pi: ``node bench/pi_open_bench.mjs FILE``, ``SessionManager.open(copy, dir)``
  then ``buildSessionContext(sm.getEntries(), sm.getLeafId())`` in one process.

Three ways we open, each in its own daemon:

* tail-first (the default for files of ``daemon.tailOpenBytes``, 32 MiB, or
  more; ``store/tailopen.py``): the leaf's context from the file's end, the
  whole file read in the background afterwards (``service/sessions/loading.py``). Its
  "until loaded" row is the time from sending ``pi/openSession`` until the
  whole file was read (``debug/stats`` polled; the read starts 0.25 s after
  the open when nothing needs it sooner). This is the goal's row;
* whole file, cold (``daemon.tailOpenBytes: 0``, an empty open-index cache):
  what every open did before; it saves the file's index after the timed part;
* whole file, warm: a second such daemon opens the same file through that
  index (``daemon.openIndex``, ``store/openindex.py``), reading the header, the
  lines the per-line reader reads and the context's lines.

A second ``pi/getContext`` of the same leaf (the context is kept, so this is the
thread hand-off, encoding, the 1.6 MB reply through the pipe and the client's
parse) is timed too, and with ``--phases`` the daemon's share of a whole-file
open is printed: our open + context through the daemon minus the in-process steps.

Peak memory is each process's ``ru_maxrss`` (``os.wait4``; for ours the daemon,
not the client, after the whole file was read). Goals (issue 12): ours <= 0.1x
Pi in time, peak RSS <= Pi's.

``--phases`` also times, in fresh processes of their own (``--phases-worker``, one per
repetition, run right before that repetition's daemon so both see the same load),
where a whole-file open + first context goes, step by step in-process: reading the file,
the regex rows (``store/scan.Lines``), the rest of the scan (columns, the lines
the per-line reader reads, the table), the tree, the first context's path index
(id -> position dict, runs), the projection, and encoding the reply.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_store import PI_PACKAGE, ROOT, build_file, fmt
from pi_sessiond.store.openindex import MIN_LINES

HERE = Path(__file__).resolve().parent
PI_SCRIPT = HERE / "pi_open_bench.mjs"
GOALS = {"open_context_ms": "ours <= 0.1x Pi", "max_rss_mb": "ours <= Pi"}


def ours(path: Path, cache_home: Path, *, save_index: bool = False, tail_first: bool = True) -> dict[str, Any]:
    """One fresh daemon: open + getContext over stdio, timed on the client.

    ``cache_home`` is its ``XDG_CACHE_HOME`` (where ``daemon.openIndex`` keeps the
    index); ``save_index``: after the timed part, wait until the daemon saved it.
    ``tail_first``: ``daemon.tailOpenBytes`` as default, else 0 (whole-file opens).
    """
    from pi_sessiond.cli.rpcclient import RpcClient

    os.environ.update(XDG_CACHE_HOME=str(cache_home), PI_SESSIOND_DEBUG_METHODS="1")  # debug/stats
    client, proc = RpcClient.spawn([sys.executable, "-m", "pi_sessiond", "serve"])
    options = {} if tail_first else {"settings": {"daemon": {"tailOpenBytes": 0}}}
    try:
        client.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                      "initializationOptions": options})
        client.notify("initialized", {})
        client.request("pi/estimateTokens", {"text": "warm-up"})  # waits for the deferred service start
        t = time.perf_counter()
        opened = client.request("pi/openSession", {"path": str(path)})
        t_open = time.perf_counter()
        context = client.request("pi/getContext", {"sessionId": opened["sessionId"]})
        t_context = time.perf_counter()
        client.request("pi/getContext", {"sessionId": opened["sessionId"]})  # the reply path alone
        t_again = time.perf_counter()
        deadline = time.monotonic() + 600
        while opened.get("loading") and client.request("debug/stats")["tailOpen"]["loaded"] < 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not read the whole file")
            time.sleep(0.005)
        t_loaded = time.perf_counter()
        save_index = save_index and opened["entryCount"] >= MIN_LINES  # a smaller file gets no index
        while save_index and client.request("debug/stats")["openIndex"]["indexSaves"] < 1:
            if time.monotonic() > deadline:
                raise RuntimeError("the daemon did not save its open index")
            time.sleep(0.05)
        stats = client.request("debug/stats")
        counts = stats["openIndex"]
        client.request("shutdown")
        client.notify("exit")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) not in (0, -15):
        raise RuntimeError(f"daemon exited with {status}")
    return {"contextMessages": len(context["messages"]),
            "open_ms": (t_open - t) * 1e3, "context_ms": (t_context - t_open) * 1e3,
            "open_context_ms": (t_context - t) * 1e3, "context_again_ms": (t_again - t_context) * 1e3,
            "loaded_ms": (t_loaded - t) * 1e3, "max_rss_mb": usage.ru_maxrss / 1024,
            "read_mb": counts["bytesRead"] / 1e6, "tail_mb": stats["tailOpen"]["tailBytesRead"] / 1e6,
            "index_hits": counts["indexHits"], "tail_opens": stats["tailOpen"]["tailOpens"]}


def phases_worker(path: Path) -> None:
    """One fresh process: the steps of open + first context in-process, one JSON line (ms)."""
    from pi_protocol.converter import unstructure
    from pi_protocol.session import ContextResult
    from pi_sessiond.rpc.offload import encode
    from pi_sessiond.store import scan
    from pi_sessiond.store.files import gc_paused
    from pi_sessiond.store.session import Session
    from pi_sessiond.store.tree import SessionTree

    out: dict[str, float] = {}
    clock = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        out[name] = (now - clock) * 1e3
        clock = now

    with gc_paused():
        buf = path.read_bytes()
        lap("read")
        scan.Lines(buf, buf.find(b"\n"))
        lap("regex rows")
        result = scan.scan_session_bytes(buf)
        assert result is not None
        out["rest of the scan"] = (time.perf_counter() - clock) * 1e3 - out["regex rows"]
        lap("_")
        tree = SessionTree(result.entries)
        lap("tree")
    session = Session(result.header or {}, tree, None)
    session.entries.path_positions(session.leaf_id)
    lap("path index")
    context = session.context()
    lap("projection")
    encode(unstructure(ContextResult(messages=list(context.messages), thinking_level=context.thinking_level,
                                     model=context.model, tokens=0)))
    lap("encode")
    del out["_"]
    print(json.dumps(out))


def phases(path: Path) -> dict[str, float]:
    """One fresh :func:`phases_worker` process: our steps in-process (ms)."""
    done = subprocess.run([sys.executable, __file__, "--phases-worker", str(path)], capture_output=True,
                          text=True, check=True, cwd=ROOT)
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def pi(path: Path) -> dict[str, Any]:
    proc = subprocess.Popen(["node", str(PI_SCRIPT), str(path)], stdout=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("pi_open_bench.mjs failed")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    result["max_rss_mb"] = usage.ru_maxrss / 1024
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000, help="entries of the long file (default 100000)")
    parser.add_argument("--repeat", type=int, default=3, help="fresh process pairs; medians (default 3)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the results as JSON")
    parser.add_argument("--phases", action="store_true", help="also time our steps in-process (fresh processes)")
    parser.add_argument("--phases-worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.phases_worker:
        phases_worker(args.phases_worker)
        return 0
    if not (PI_PACKAGE / "package.json").exists():
        parser.error("needs Pi: run `npm ci --prefix tests/parity` first")
    path = build_file("long", args.entries)
    command = shlex.join([".venv/bin/python", "bench/bench_open.py", *(sys.argv[1:] if argv is None else argv)])
    pi_version = json.loads((PI_PACKAGE / "package.json").read_text())["version"]
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    load = os.getloadavg()[0]
    print(f"$ {command}")
    print(f"# python {platform.python_version()}, node {node}, Pi {pi_version}, {os.cpu_count()} cpus, "
          f"load {load:.1f}; {path.name} ({path.stat().st_size / 1e6:.1f} MB), repeat={args.repeat} (medians)")
    runs: dict[str, list[dict[str, Any]]] = {"ours": [], "whole": [], "warm": [], "pi": []}
    step_runs: list[dict[str, float]] = []
    for _ in range(args.repeat):  # interleaved, so drift hits all sides alike
        if args.phases:  # right before the daemon: the two see the same load
            step_runs.append(phases(path))
        with tempfile.TemporaryDirectory(prefix="bench-open-cache-") as cache:  # cold: no index yet
            runs["ours"].append(ours(path, Path(cache)))
        with tempfile.TemporaryDirectory(prefix="bench-open-cache-") as cache:
            runs["whole"].append(ours(path, Path(cache), save_index=True, tail_first=False))
            runs["warm"].append(ours(path, Path(cache), tail_first=False))  # a second daemon: through the index
        runs["pi"].append(pi(path))
    indexed = args.entries >= MIN_LINES  # smaller files get no index: their warm runs are cold ones
    if any(r["index_hits"] != indexed for r in runs["warm"]) or any(r["index_hits"] for r in runs["whole"]):
        raise RuntimeError("the warm runs should open through the index, the cold ones not")
    if any(r["tail_opens"] != 1 for r in runs["ours"]) or any(r["tail_opens"] for r in runs["whole"] + runs["warm"]):
        raise RuntimeError("the tail-first runs should open tail-first, the whole-file ones not")
    med = {side: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for side, rs in runs.items()}
    if len({med[side]["contextMessages"] for side in med}) != 1:
        print("# WARNING: ours and Pi disagree on the context size", file=sys.stderr)
    print("| metric | ours | Pi | ours/Pi | goal |")
    print("|---|---:|---:|---:|---|")
    rows = (("open_ms", "open (ms)"), ("context_ms", "first context (ms)"),
            ("open_context_ms", "open + context (ms)"), ("max_rss_mb", "peak RSS (MB)"))
    for side, suffix in (("ours", ", tail-first"), ("whole", ", whole file, cold"), ("warm", ", whole file, warm")):
        for key, label in rows:
            a, b = med[side][key], med["pi"][key]
            goal = GOALS.get(key, "") if side == "ours" else ""
            print(f"| {label[:-5]}{suffix} {label[-4:]} | {fmt(a)} | {fmt(b)} | {a / b:.2f} | {goal} |")
        if side == "ours":
            a = med["ours"]["loaded_ms"]
            print(f"| until loaded, tail-first (ms) | {fmt(a)} | {fmt(med['pi']['open_context_ms'])} | "
                  f"{a / med['pi']['open_context_ms']:.2f} |  |")
    print(f"# bytes read by the daemon's opens and entries (debug/stats): tail-first {fmt(med['ours']['tail_mb'])} MB "
          f"before the context (then {fmt(med['ours']['read_mb'])} MB for the whole file), "
          f"whole file cold {fmt(med['whole']['read_mb'])} MB, warm {fmt(med['warm']['read_mb'])} MB")
    print(f"# context messages: ours {med['ours']['contextMessages']:.0f}, Pi {med['pi']['contextMessages']:.0f}")
    steps = {k: statistics.median(r[k] for r in step_runs) for k in step_runs[0]} if step_runs else {}
    if steps:
        print("| our step, in-process (ms) | " + " | ".join(steps) + " | sum |")
        print("|---" * (len(steps) + 2) + "|")
        print("| median | " + " | ".join(fmt(v) for v in steps.values()) + f" | {fmt(sum(steps.values()))} |")
        pairs = zip(runs["whole"], step_runs, strict=True)
        share = statistics.median(o["open_context_ms"] - sum(r.values()) for o, r in pairs)
        floor = min(o["open_context_ms"] for o in runs["whole"]) - min(sum(r.values()) for r in step_runs)
        print(f"# the daemon's share, open + context through the daemon - the in-process sum: median of the "
              f"repetitions {fmt(share)} ms, fastest - fastest {fmt(floor)} ms; "
              f"a second pi/getContext (reply path alone): {fmt(med['whole']['context_again_ms'])} ms")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"command": command, "load": load, "runs": runs, "medians": med,
                                         "phases": steps, "phase_runs": step_runs}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``pi/getContext`` latency while 8 compactions stream (issue 5, "Prove it").

One daemon (``python -m pi_sessiond serve``) with the loopback provider
streaming slowly (``Fault("ok", chunk_delay=...)``): 8 sessions compact at
once while a 9th session's context is read again and again. Reports the
getContext latency (p50/p99/max) during the compactions and idle, and checks
that all 8 compactions completed.

Usage: ``python bench/bench_busy.py [--entries 2000] [--reads 400] [--chunk-delay 0.02]``
Target: p99 < 20 ms while the 8 compactions stream.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

from tests.loopback_provider import Fault, LoopbackProvider  # noqa: E402

from bench_rpc import Client  # noqa: E402
from pi_sessiond.examples.generator import write_stream  # noqa: E402

SESSIONS = 8


def quantiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": statistics.median(ordered),
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
        "max": ordered[-1],
    }


async def reads(client: Client, session_id: str, count: int, start_id: int) -> list[float]:
    times = []
    for i in range(count):
        t = time.perf_counter()
        reply = await client.call(start_id + i, "pi/getContext", {"sessionId": session_id})
        assert "result" in reply, reply
        times.append((time.perf_counter() - t) * 1e3)
    return times


async def run(args: argparse.Namespace, workdir: Path, base_url: str) -> dict[str, Any]:
    settings = {"summarizer": {"provider": "openai", "baseUrl": base_url + "/v1", "model": "loopback",
                               "apiKeyEnv": "LOOPBACK_KEY"},
                "compaction": {"keepRecentTokens": 2000}, "daemon": {"maxConcurrentSummaries": SESSIONS}}
    env = {**os.environ, "LOOPBACK_KEY": "bench-key", "PI_CODING_AGENT_DIR": str(workdir / "agent")}
    with open(os.environ.get("BENCH_STDERR", os.devnull), "wb") as daemon_log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pi_sessiond", "serve", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=daemon_log, env=env, cwd=REPO,
        )
    client = Client(proc)
    try:
        await client.call(0, "initialize", {"capabilities": {}, "initializationOptions": {"settings": settings}})
        ids = []
        for i in range(SESSIONS + 1):
            path = workdir / f"s{i}.jsonl"
            write_stream(path, seed=i, entries=args.entries, shape="linear")
            opened = await client.call(1000 + i, "pi/openSession", {"path": str(path)})
            ids.append(opened["result"]["sessionId"])
            # A session in use has its context built (appends keep it): warm it like one.
            await client.call(1100 + i, "pi/getContext", {"sessionId": ids[-1]})
        idle = await reads(client, ids[-1], args.reads, 10_000)
        started = time.perf_counter()
        jobs = [client.send(2000 + i, "pi/compact", {"sessionId": sid}) for i, sid in enumerate(ids[:SESSIONS])]
        assert proc.stdin is not None
        await proc.stdin.drain()
        busy = await reads(client, ids[-1], args.reads, 20_000)
        results = await asyncio.wait_for(asyncio.gather(*jobs), 600)
        seconds = time.perf_counter() - started
        ok = sum("result" in r for r in results)
        return {"idle": quantiles(idle), "busy": quantiles(busy), "compactions_ok": ok, "seconds": seconds}
    finally:
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=400)
    parser.add_argument("--chunk-delay", type=float, default=0.02)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, LoopbackProvider() as provider:
        provider.set_default(Fault("ok", chunk_delay=args.chunk_delay))
        out = asyncio.run(run(args, Path(tmp), provider.base_url))
    flags = f"--entries {args.entries} --reads {args.reads} --chunk-delay {args.chunk_delay}"
    print(f"$ python bench/bench_busy.py {flags}")
    print("| state | getContext p50 ms | p99 ms | max ms |")
    print("|---|---:|---:|---:|")
    for state in ("idle", "busy"):
        q = out[state]
        print(f"| {state} | {q['p50']:.2f} | {q['p99']:.2f} | {q['max']:.2f} |")
    verdict = "met" if out["busy"]["p99"] < 20 else "missed"
    print(f"\n{out['compactions_ok']}/{SESSIONS} compactions completed in {out['seconds']:.1f} s; "
          f"target p99 < 20 ms while they stream: {verdict}")


if __name__ == "__main__":
    main()

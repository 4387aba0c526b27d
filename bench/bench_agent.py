"""Append and getContext latency of an agent's loop while compactions run (not a timed test).

    .venv/bin/python bench/bench_agent.py                         # 600 steps, summaries take 0.3 s
    .venv/bin/python bench/bench_agent.py --steps 1000 --summary-delay 1 --json bench/out/agent.json
    .venv/bin/python bench/bench_agent.py --fsync never             # without an fsync per append

One daemon (``pi-sessiond serve`` on stdio, a fresh subprocess) with a 24k window and the
loopback model as its summarizer (over HTTP, each summary answered after ``--summary-delay``
seconds, so compactions run for a while). The client is the example agent's
(``examples/agent/agent.py``); per step it appends an answer without usage and a 6,000-character
tool result (``pi/append``), then asks ``pi/getContext {format: "openai"}`` without waiting.
Each call's wall-clock time is taken at the client; a call counts as "during a compaction" when a
``pi/compactionStarted`` had arrived without its ``pi/compactionEnded`` when it was sent.
Prints p50 / p99 / max per method, during compactions and overall. Target: p99 <= 20 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]

from examples.agent.agent import Daemon  # noqa: E402
from tests.loopback_provider import Fault, LoopbackProvider  # noqa: E402

Samples = dict[str, dict[str, list[float]]]


def step_entries(step: int, chars: int) -> list[dict[str, Any]]:
    call = {"type": "toolCall", "id": f"c{step}", "name": "read", "arguments": {"path": f"f{step}.txt"}}
    answer = {"role": "assistant", "content": [{"type": "text", "text": f"step {step}"}, call],
              "stopReason": "toolUse"}
    result = {"role": "toolResult", "toolCallId": f"c{step}", "toolName": "read",
              "content": [{"type": "text", "text": (f"step {step} line\n" * chars)[:chars]}], "isError": False}
    return [{"type": "message", "message": answer}, {"type": "message", "message": result}]


def running(daemon: Daemon) -> bool:
    started = sum(1 for m, _ in daemon.notifications if m == "pi/compactionStarted")
    return started > sum(1 for m, _ in daemon.notifications if m == "pi/compactionEnded")


def timed(daemon: Daemon, samples: Samples, method: str, params: Any) -> Any:
    during = running(daemon)
    begin = time.perf_counter()
    result = daemon.call(method, params)
    elapsed = (time.perf_counter() - begin) * 1000
    samples[method]["all"].append(elapsed)
    if during:
        samples[method]["during"].append(elapsed)
    return result


def run(steps: int, delay: float, chars: int, fsync: str = "always") -> tuple[Samples, int]:
    samples: Samples = {m: {"all": [], "during": []} for m in ("pi/append", "pi/getContext")}
    with tempfile.TemporaryDirectory() as home, LoopbackProvider() as loopback:
        os.environ.update({"PI_CODING_AGENT_DIR": f"{home}/agent", "XDG_CACHE_HOME": f"{home}/cache",
                           "LOOPBACK_KEY": "k"})
        loopback.set_default(Fault("delay", delay=delay))
        daemon = Daemon.spawn([sys.executable, "-m", "pi_sessiond", "serve"])
        summarizer = {"provider": "openai", "baseUrl": loopback.base_url + "/v1", "model": "loopback",
                      "apiKeyEnv": "LOOPBACK_KEY"}
        daemon.initialize({"contextWindow": 24000, "summarizer": summarizer, "daemon": {"fsync": fsync}})
        sid = daemon.call("pi/createSession", {"cwd": home})["sessionId"]
        daemon.call("pi/append", {"sessionId": sid, "entries": [
            {"type": "message", "message": {"role": "user", "content": "Read every file."}}]})
        for step in range(steps):
            timed(daemon, samples, "pi/append", {"sessionId": sid, "entries": step_entries(step, chars)})
            timed(daemon, samples, "pi/getContext", {"sessionId": sid, "format": "openai"})
        compactions = sum(1 for m, _ in daemon.notifications if m == "pi/compactionEnded")
        daemon.close()
    return samples, compactions


def quantiles(values: list[float]) -> dict[str, float]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {"n": len(values), "p50": round(statistics.median(ordered), 2), "p99": round(p99, 2),
            "max": round(ordered[-1], 2)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--summary-delay", type=float, default=0.3, help="seconds each summary takes")
    parser.add_argument("--tool-chars", type=int, default=6000)
    parser.add_argument("--fsync", choices=("always", "never"), default="always", help="daemon.fsync")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args(argv)
    samples, compactions = run(args.steps, args.summary_delay, args.tool_chars, args.fsync)
    figures = {method: {when: quantiles(values) for when, values in by.items()} for method, by in samples.items()}
    print(f"{args.steps} steps, {compactions} compactions, summaries {args.summary_delay} s, "
          f"fsync {args.fsync}; latency in ms (load average {os.getloadavg()[0]:.1f})")
    print(f"{'method':15} {'when':7} {'n':>6} {'p50':>7} {'p99':>7} {'max':>7}")
    for method, by in figures.items():
        for when, q in by.items():
            cells = " ".join(f"{q.get(k, '-'):>7}" for k in ("p50", "p99", "max"))
            print(f"{method:15} {when:7} {q['n']:>6} {cells}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"compactions": compactions, **figures}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Visible latency at the threshold with a prepared draft (``compaction.prepareAt``) vs without (issue 18).

One daemon per mode (``python -m pi_sessiond serve`` over stdio), the loopback
provider streaming its answers at ``--tokens-per-second`` (its chunks are 40
characters, 10 of its tokens). Each run uses a fresh generated session:

- *with a draft* (``compaction.prepareAt: 0.5``): an append past half the
  threshold starts the background draft; ``pi/compact {draft: true}`` waits for
  it and answers it (checked: one summary's requests in all);
- *without* (``prepareAt: null``): nothing before the threshold.

Then the clock starts, the append that crosses the threshold is sent, and it
stops when the compaction entry is on disk (the file is polled every 0.5 ms
from the offset it had). Every run checks that the with-draft compaction asked
the model nothing.

Usage: ``python bench/bench_drafts.py [--runs 20] [--tokens-per-second 60] [--entries 150]``
Goal: ≤ 50 ms median with the draft.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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

from tests.loopback_provider import CHUNK_CHARS, Fault, LoopbackProvider, count_tokens  # noqa: E402

from bench_rpc import Client  # noqa: E402
from pi_sessiond.examples.generator import write_stream  # noqa: E402

WINDOW = {"contextWindow": 20000, "compaction": {"reserveTokens": 4000, "keepRecentTokens": 1000}}
POLL_SECONDS = 0.0005
DEADLINE = 600.0
_ids = itertools.count(1)


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant(text: str, input_tokens: int) -> dict[str, Any]:
    usage = {"input": input_tokens, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": input_tokens + 5,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    return {"type": "message", "message": {
        "role": "assistant", "content": [{"type": "text", "text": text}], "api": "anthropic-messages",
        "provider": "anthropic", "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "stop", "timestamp": 2}}


async def call(client: Client, method: str, params: Any) -> Any:
    reply = await asyncio.wait_for(client.call(next(_ids), method, params), DEADLINE)
    assert "result" in reply, reply
    return reply["result"]


async def on_disk(path: Path, offset: int) -> None:
    """Return once a compaction entry was written after ``offset``."""
    deadline = time.monotonic() + DEADLINE
    with open(path, "rb") as fh:
        while time.monotonic() < deadline:
            fh.seek(offset)
            if b'"type":"compaction"' in fh.read():
                return
            await asyncio.sleep(POLL_SECONDS)
    raise TimeoutError(f"no compaction entry in {path}")


async def one_run(client: Client, provider: LoopbackProvider, path: Path, draft: bool) -> float:
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    if draft:
        before = len(provider.requests)
        await call(client, "pi/append", {"sessionId": sid, "entries": [user("next task"), assistant("ok", 9000)]})
        await call(client, "pi/compact", {"sessionId": sid, "draft": True})  # waits for the background draft
        assert len(provider.requests) - before <= 2, "more than one summary (history + turn prefix) was asked for"
    asked = len(provider.requests)
    offset = path.stat().st_size
    started = time.perf_counter()
    await call(client, "pi/append", {"sessionId": sid, "entries": [user("go on"), assistant("over", 17000)]})
    await on_disk(path, offset)
    seconds = time.perf_counter() - started
    if draft:
        assert len(provider.requests) == asked, "the threshold compaction asked the model again"
    await call(client, "pi/closeSession", {"sessionId": sid})
    return seconds


async def mode(args: argparse.Namespace, workdir: Path, provider: LoopbackProvider, draft: bool) -> list[float]:
    compaction = {**WINDOW["compaction"], "prepareAt": 0.5 if draft else None}
    settings = {**WINDOW, "compaction": compaction, "summarizer": {
        "provider": "openai", "baseUrl": provider.base_url + "/v1", "model": "loopback", "apiKeyEnv": "LOOPBACK_KEY"}}
    env = {**os.environ, "LOOPBACK_KEY": "bench-key", "PI_CODING_AGENT_DIR": str(workdir / "agent")}
    with open(os.environ.get("BENCH_STDERR", os.devnull), "wb") as log:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "pi_sessiond", "serve", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=log, env=env, cwd=REPO)
    client = Client(proc)
    try:
        await call(client, "initialize", {"capabilities": {}, "initializationOptions": {"settings": settings}})
        times = []
        for run in range(args.runs):
            path = workdir / f"{'with' if draft else 'without'}-{run}.jsonl"
            write_stream(path, seed=run, entries=args.entries, shape="linear")
            times.append(await one_run(client, provider, path, draft))
        return times
    finally:
        await client.close()


def row(name: str, times: list[float]) -> str:
    ms = sorted(t * 1e3 for t in times)
    return (f"| {name} | {len(ms)} | {statistics.median(ms):.1f} | {ms[0]:.1f} | "
            f"{ms[min(len(ms) - 1, int(len(ms) * 0.9))]:.1f} | {ms[-1]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--tokens-per-second", type=float, default=60.0)
    parser.add_argument("--entries", type=int, default=150)
    args = parser.parse_args()
    chunk_delay = count_tokens("x" * CHUNK_CHARS) / args.tokens_per_second
    with tempfile.TemporaryDirectory() as tmp, LoopbackProvider() as provider:
        provider.set_default(Fault("ok", chunk_delay=chunk_delay))
        with_draft = asyncio.run(mode(args, Path(tmp), provider, draft=True))
        without = asyncio.run(mode(args, Path(tmp), provider, draft=False))
    print(f"$ python bench/bench_drafts.py --runs {args.runs} --tokens-per-second {args.tokens_per_second:g} "
          f"--entries {args.entries}")
    print(f"(loopback: {args.tokens_per_second:g} tokens/s, a chunk of {CHUNK_CHARS} chars every "
          f"{chunk_delay * 1e3:.0f} ms)")
    print("| threshold crossed → compaction entry on disk | runs | median ms | min ms | p90 ms | max ms |")
    print("|---|---:|---:|---:|---:|---:|")
    print(row("with a prepared draft (`prepareAt: 0.5`)", with_draft))
    print(row("without (`prepareAt: null`)", without))
    median = statistics.median(with_draft) * 1e3
    print(f"\ngoal ≤ 50 ms median with the draft: {'met' if median <= 50 else 'missed'} ({median:.1f} ms); "
          f"{statistics.median(without) / statistics.median(with_draft):.0f}× faster than without")


if __name__ == "__main__":
    main()

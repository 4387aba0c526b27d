"""The pipeline's own overhead for one summary, beyond the HTTP round trip (issue 4, "Prove it").

    .venv/bin/python bench/bench_pipeline.py                        # both providers, 50 runs each
    .venv/bin/python bench/bench_pipeline.py --provider openai --runs 200 --profile
    .venv/bin/python bench/bench_pipeline.py --in-process --json bench/out/pipeline.json

The loopback provider (``tests/loopback_provider.py``) answers every request at
once with a tiny valid summary (mode ``ok``, ``--reply``). By default it runs as
a subprocess (``python -m tests.loopback_provider``) so that its work does not
share this interpreter's GIL; ``--in-process`` runs it in a thread instead.

The session is generated (``linear``, ``--seed``, ``--entries``) and cut where
the compaction needs exactly one request (no split turn). Measured per run,
interleaved so that drift hits every row alike (``time.perf_counter``):

- ``raw``: the same request (same URL, headers and JSON body, built by the
  provider's own ``build_body``) sent with a bare ``httpx.AsyncClient.stream``
  and read to the end; the connection is kept alive, as the provider's is.
- ``provider``: ``summarizer.summarize(request)``: SSE parsing, usage, the retry
  loop, no pipeline.
- ``summarize_history``: ``pipeline.summaries.summarize_compaction`` of the
  preparation's jobs: serialization, prompt, provider, validation; no
  preparation, no write.
- ``compact``: ``pipeline.compaction.compact`` end to end on a freshly opened copy of the
  session (copy and open not timed): prepare, summarize, validate, size check,
  append the entry (one write + fsync, as in production), context after.

Every number is the median over ``--runs`` runs after ``--warmup`` runs;
overhead = median(step) - median(raw). Target: compact - raw <= 5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import logging
import os
import platform
import pstats
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.errors import NothingToCompact
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.pipeline.compaction import compact, prepare_or_refuse
from pi_sessiond.pipeline.requests import HISTORY_HEADINGS, compaction_jobs
from pi_sessiond.pipeline.summaries import summarize_compaction
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.factory import make_summarizer
from pi_sessiond.summarizers.http import HttpSummarizer, make_timeout

ROOT = Path(__file__).resolve().parent.parent
KEY_ENV = "PI_SESSIOND_BENCH_KEY"
TINY_REPLY = "\n".join(f"{heading}\n- ok" for heading in HISTORY_HEADINGS)
STEPS = ("raw", "provider", "summarize_history", "compact", "compact_no_fsync")
TARGET_MS = 5.0

Step = Callable[[], Awaitable[None]]


# --------------------------------------------------------------- the loopback
@contextmanager
def loopback(in_process: bool) -> Iterator[str]:
    """The loopback provider's base URL, answering ``ok`` with :data:`TINY_REPLY`."""
    if in_process:
        sys.path.insert(0, str(ROOT))
        from tests.loopback_provider import Fault, LoopbackProvider

        with LoopbackProvider() as provider:
            provider.set_default(Fault("ok", reply=TINY_REPLY))
            yield provider.base_url
        return
    command = [sys.executable, "-m", "tests.loopback_provider", "--port", "0", "--mode", "ok", "--reply", TINY_REPLY]
    proc = subprocess.Popen(command, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # EOF on stdin stops it
        proc.wait(10)


# ------------------------------------------------------------------ the session
def small_session(directory: Path, seed: int, entries: int) -> tuple[Path, CompactionSettings, CompactionPreparation]:
    """A generated session and the smallest ``keepRecentTokens`` whose cut needs one request."""
    path = directory / f"linear-{seed}-{entries}.jsonl"
    write(path, generate(seed=seed, entries=entries, shape="linear"))
    session = Session.open(path)
    for keep in range(200, 40000, 100):
        settings = CompactionSettings(keep_recent_tokens=keep)
        try:
            prep = prepare_or_refuse(session, settings)
        except NothingToCompact:
            continue
        if not prep.is_split_turn:
            return path, settings, prep
    raise SystemExit(f"no unsplit cut point in {path}; try another --seed or --entries")


def history_request(prep: CompactionPreparation) -> SummaryRequest:
    """The one request a compaction of an unsplit preparation sends (``pipeline.requests``)."""
    job = compaction_jobs(prep).history
    if job is None:
        raise SystemExit("the preparation sends no history request")
    return job.request()


# -------------------------------------------------------------------- the steps
class Bench:
    """The four steps for one provider, sharing one session file and one loopback."""

    def __init__(self, summarizer: HttpSummarizer, source: Path, settings: CompactionSettings,
                 prep: CompactionPreparation, scratch: Path) -> None:
        self.summarizer, self.source, self.settings, self.prep = summarizer, source, settings, prep
        self.scratch = scratch
        self.request = history_request(prep)
        self.client = httpx.AsyncClient(timeout=make_timeout(summarizer.settings.timeout_seconds))
        self.copies = 0

    async def aclose(self) -> None:
        await self.client.aclose()
        await self.summarizer.aclose()

    async def raw(self) -> None:
        body = self.summarizer.build_body(self.request)
        headers = self.summarizer.request_headers()
        async with self.client.stream("POST", self.summarizer.endpoint(), json=body, headers=headers) as response:
            if response.status_code != 200:
                raise SystemExit(f"raw request failed: HTTP {response.status_code}")
            async for _ in response.aiter_bytes():
                pass

    async def provider(self) -> None:
        await self.summarizer.summarize(self.request)

    async def summarize_history(self) -> None:
        await summarize_compaction(self.summarizer, compaction_jobs(self.prep))

    def fresh_session(self) -> Session:
        """An opened copy of the session (not timed)."""
        self.copies += 1
        path = self.scratch / f"run-{self.copies}.jsonl"
        shutil.copyfile(self.source, path)
        return Session.open(path)

    async def timed_compact(self, fsync: bool = True) -> float:
        session = self.fresh_session()
        session.fsync = fsync
        start = time.perf_counter()
        await compact(session, self.summarizer, settings=self.settings)
        elapsed = time.perf_counter() - start
        assert session.path is not None
        session.path.unlink()
        return elapsed

    async def compact(self) -> None:
        await self.timed_compact()

    async def compact_no_fsync(self) -> None:
        await self.timed_compact(fsync=False)


async def timed(step: Step) -> float:
    start = time.perf_counter()
    await step()
    return time.perf_counter() - start


async def measure(bench: Bench, runs: int, warmup: int) -> dict[str, list[float]]:
    """Milliseconds per step, ``runs`` each after ``warmup``, interleaved."""
    times: dict[str, list[float]] = {step: [] for step in STEPS}
    plain: dict[str, Step] = {"raw": bench.raw, "provider": bench.provider,
                              "summarize_history": bench.summarize_history}
    for i in range(warmup + runs):
        sample = {name: await timed(step) for name, step in plain.items()}
        sample["compact"] = await bench.timed_compact()
        sample["compact_no_fsync"] = await bench.timed_compact(fsync=False)
        if i >= warmup:
            for name, seconds in sample.items():
                times[name].append(seconds * 1e3)
    return times


class _Connects(logging.Handler):
    """Counts new TCP connections from httpcore's trace log."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += record.getMessage().startswith("connect_tcp.complete")


async def connections_per_call(bench: Bench, calls: int = 10) -> dict[str, float]:
    """New TCP connections per call of each step (a separate pass: trace logging costs time)."""
    logger = logging.getLogger("httpcore.connection")
    handler, level = _Connects(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    steps: dict[str, Step] = {"raw": bench.raw, "provider": bench.provider,
                              "summarize_history": bench.summarize_history,
                              "compact": bench.compact, "compact_no_fsync": bench.compact_no_fsync}
    counts: dict[str, float] = {}
    try:
        for name, step in steps.items():
            await step()  # a warm connection first, if the step keeps one
            handler.count = 0
            for _ in range(calls):
                await step()
            counts[name] = handler.count / calls
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
    return counts


async def profile_compact(bench: Bench, runs: int, top: int) -> str:
    """cProfile of ``runs`` compactions (copy and open excluded), the ``top`` rows by own time."""
    profiler = cProfile.Profile()
    for _ in range(runs):
        session = bench.fresh_session()
        profiler.enable()
        await compact(session, bench.summarizer, settings=bench.settings)
        profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


# ----------------------------------------------------------------------- report
def summary(times: dict[str, list[float]], connects: dict[str, float]) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    raw = statistics.median(times["raw"])
    for step, values in times.items():
        ordered = sorted(values)
        median = statistics.median(ordered)
        rows[step] = {
            "median_ms": median,
            "p10_ms": ordered[len(ordered) // 10],
            "p90_ms": ordered[(len(ordered) * 9) // 10],
            "overhead_ms": median - raw,
            "connections_per_call": connects[step],
        }
    return rows


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    lines = ["| provider | step | median ms | p10 ms | p90 ms | overhead vs raw, ms | new TCP conns/call | target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for provider, rows in results.items():
        for step, row in rows.items():
            target = ""
            if step == "compact":
                verdict = "met" if row["overhead_ms"] <= TARGET_MS else "MISSED"
                target = f"<= {TARGET_MS:g} ms: {verdict}"
            overhead = "" if step == "raw" else f"{row['overhead_ms']:.2f}"
            lines.append(f"| {provider} | {step} | {row['median_ms']:.2f} | {row['p10_ms']:.2f} | "
                         f"{row['p90_ms']:.2f} | {overhead} | {row['connections_per_call']:g} | {target} |")
    return "\n".join(lines)


def describe(prep: CompactionPreparation, settings: CompactionSettings, request: SummaryRequest) -> str:
    return (f"# session: {len(prep.messages_to_summarize)} messages to summarize, keepRecentTokens "
            f"{settings.keep_recent_tokens}, prompt {len(request.prompt)} chars; reply {len(TINY_REPLY)} chars")


async def run_provider(provider: str, base: str, args: argparse.Namespace, scratch: Path,
                       session: tuple[Path, CompactionSettings, CompactionPreparation]) -> dict[str, Any]:
    url = base + ("/v1" if provider == "openai" else "")
    settings = SummarizerSettings(provider=provider, base_url=url, model="loopback-model", api_key_env=KEY_ENV)
    summarizer = make_summarizer(settings)
    assert isinstance(summarizer, HttpSummarizer)
    bench = Bench(summarizer, *session, scratch=scratch)
    try:
        times = await measure(bench, args.runs, args.warmup)
        connects = await connections_per_call(bench)
        profile = await profile_compact(bench, args.runs, args.top) if args.profile else ""
    finally:
        await bench.aclose()
    return {"rows": summary(times, connects), "times_ms": times, "profile": profile}


async def main_async(args: argparse.Namespace) -> int:
    os.environ.setdefault(KEY_ENV, "sk-bench-not-a-real-key")
    providers = ["openai", "anthropic"] if args.provider == "both" else [args.provider]
    with tempfile.TemporaryDirectory(prefix="bench-pipeline-") as tmp, loopback(args.in_process) as base:
        scratch = Path(tmp)
        session = small_session(scratch, args.seed, args.entries)
        print(describe(session[2], session[1], history_request(session[2])))
        results = {p: await run_provider(p, base, args, scratch, session) for p in providers}
    print()
    print(table({p: r["rows"] for p, r in results.items()}))
    for provider, result in results.items():
        if result["profile"]:
            print(f"\n## cProfile of pipeline.compaction.compact, {provider}, {args.runs} runs\n")
            print(result["profile"])
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        doc = {"command": args.command, "machine": machine(), "results": results}
        Path(args.json).write_text(json.dumps(doc, indent=1))
    missed = [p for p, r in results.items() if r["rows"]["compact"]["overhead_ms"] > TARGET_MS]
    return 1 if missed and args.strict else 0


def machine() -> str:
    return (f"python {platform.python_version()}, httpx {httpx.__version__}, {platform.machine()} "
            f"{os.cpu_count()} cpus, load {os.getloadavg()[0]:.2f}")


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--provider", choices=["openai", "anthropic", "both"], default="both")
    parser.add_argument("--runs", type=int, default=50, help="measured runs per step (default 50)")
    parser.add_argument("--warmup", type=int, default=10, help="unmeasured runs first (default 10)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--entries", type=int, default=40, help="entries in the generated session (default 40)")
    parser.add_argument("--in-process", action="store_true", help="loopback in a thread, not a subprocess")
    parser.add_argument("--profile", action="store_true", help="cProfile --runs more compactions per provider")
    parser.add_argument("--top", type=int, default=25, help="rows of each profile listing")
    parser.add_argument("--strict", action="store_true", help="exit 1 when the target is missed")
    parser.add_argument("--json", help="write every sample and the summary here")
    args = parser.parse_args(argv)
    args.command = shlex.join([".venv/bin/python", "bench/bench_pipeline.py", *(argv or sys.argv[1:])])
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    print(f"$ {args.command}")
    print(f"# {machine()}; loopback {'in-process thread' if args.in_process else 'subprocess'}; "
          f"runs={args.runs} warmup={args.warmup} (medians)")
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    raise SystemExit(main())

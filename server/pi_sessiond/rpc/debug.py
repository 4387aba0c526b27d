"""Test-only ``debug/*`` methods; registered only with ``PI_SESSIOND_DEBUG_METHODS=1``.

They exercise the JSON-RPC layer without the services: ``debug/echo`` (the
bench's trivial request when ``pi/estimateTokens`` is absent), ``debug/slow``
(progress + cancellation), ``debug/tick`` (an async notification),
``debug/typed`` (params structured as ``GetContextParams``), ``debug/stats`` (bookkeeping table sizes and RSS,
for leak tests), ``debug/notify``, ``debug/hook``, ``debug/fail``,
``debug/configuration`` (what the glue passed to the daemon), ``debug/loopStall``
(the event loop's longest stall since the last call: :class:`LoopWatch`) and
``debug/block`` (a stall of the loop, to check that watch). Not part of the
protocol: ``docs/protocol.md`` does not list them.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from pi_protocol.params import GetContextParams
from pi_sessiond.errors import PiError
from pi_sessiond.rpc import codecache
from pi_sessiond.rpc.methods import register_method
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.store import indexedfile, tailopen

if TYPE_CHECKING:
    from pi_sessiond.rpc.server import PiServer

F = TypeVar("F", bound=Callable[..., Any])


def _rss_kib() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return -1


def _method(server: PiServer, name: str, params_cls: type[Any] | None = None, *,
            progress: bool = False) -> Callable[[F], F]:
    """Decorator: register a typed handler outside the method table."""

    def decorator(fn: F) -> F:
        register_method(server, name, params_cls, fn, progress=progress)
        return fn

    return decorator


class LoopWatch:
    """The event loop's longest stall: a task that asks to wake every :data:`TICK` seconds and keeps the
    largest delay past that (anything that held the loop: a handler, a full garbage collection, the GIL
    held by another thread). Started by the first ``debug/loopStall``; costs a wake-up per tick."""

    TICK = 0.005

    def __init__(self) -> None:
        self.longest = 0.0
        self.ticks = 0
        self._task: asyncio.Task[None] | None = None

    def take(self) -> dict[str, float]:
        """The longest stall (ms) and the ticks since the last call; starts watching at the first."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._watch())
        out = {"longestMs": round(self.longest * 1e3, 2), "ticks": self.ticks}
        self.longest, self.ticks = 0.0, 0
        return out

    async def _watch(self) -> None:
        while True:
            asked = time.perf_counter()
            await asyncio.sleep(self.TICK)
            self.longest = max(self.longest, time.perf_counter() - asked - self.TICK)
            self.ticks += 1


def register(server: PiServer) -> None:
    """Add the ``debug/*`` methods to ``server``."""

    @_method(server, "debug/echo")
    def echo(params: Any) -> Any:
        return params

    @_method(server, "debug/slow", progress=True)
    async def slow(params: Any, progress: ProgressFactory) -> Any:
        params = params or {}
        steps, delay = int(params.get("steps", 5)), float(params.get("delay", 0.05))
        bar = await progress.begin("debug/slow", params.get("workDoneToken"))
        try:
            for step in range(steps):
                await asyncio.sleep(delay)
                bar.report(f"step {step + 1}/{steps}", (step + 1) * 100 // steps)
        except asyncio.CancelledError:
            bar.end("cancelled")
            raise
        bar.end("done")
        return {"steps": steps, "token": getattr(bar, "token", None)}

    @_method(server, "debug/stats")
    def stats(params: Any) -> Any:
        protocol = server.protocol
        return {
            "requestFutures": len(protocol._request_futures),
            "resultTypes": len(protocol._result_types),
            "progressTokens": len(protocol.progress.tokens),
            "tasks": len(asyncio.all_tasks()),
            "rssKiB": _rss_kib(),
            "openIndex": dict(indexedfile.STATS),  # bytes read by session opens, index hits and saves
            "tailOpen": dict(tailopen.STATS),  # tail-first opens, the bytes they read, whole-file reads after them
            "codeCache": dict(codecache.STATS),  # generated code reused from an earlier start, and compiled
        }

    @_method(server, "debug/notify")
    def notify(params: Any) -> Any:
        server.events.notify(params["method"], params.get("payload"))
        return None

    @_method(server, "debug/hook")
    async def hook(params: Any) -> Any:
        if not server.hooks.declared(params["hook"]):
            return {"declared": False}
        answer = await server.hooks.request(params["method"], params.get("payload"), params.get("timeout", 5.0))
        return {"declared": True, "answer": answer}

    @_method(server, "debug/fail")
    def fail(params: Any) -> Any:
        if params and params.get("reason"):
            error = PiError(params.get("message", "failed"), data={"detail": 1})
            error.reason = params["reason"]
            raise error
        raise ValueError("secret detail that must not reach the client")

    @_method(server, "debug/tick")
    async def tick(params: Any) -> None:
        """An ``async def`` notification handler (pygls leaks their futures unless fixed)."""
        await asyncio.sleep(0)

    @_method(server, "debug/typed", GetContextParams)
    def typed(params: GetContextParams) -> Any:
        return params

    watch = LoopWatch()

    @_method(server, "debug/loopStall")
    def loop_stall(params: Any) -> Any:
        return watch.take()

    @_method(server, "debug/block")
    def block(params: Any) -> Any:
        time.sleep(float((params or {}).get("seconds", 0.2)))  # holds the loop: a stall on purpose
        return None

    @_method(server, "debug/workers")
    async def summary_workers(params: Any) -> Any:
        """Start every summary worker process as concurrent summaries would (when the daemon uses them)
        and name them: a soak counts their pipes in its baseline, not as a leak."""
        from pi_sessiond.summarizers import workers

        busy = [workers.in_process(workers.pid_after, 0.2) for _ in range(2 * workers.PROCESSES)]
        pids = set(await asyncio.gather(*busy)) - {os.getpid()}
        return {"processes": workers.uses_processes(), "pids": sorted(pids)}

    heap: list[Any] = []

    @_method(server, "debug/heap")
    def heap_growth(params: Any) -> Any:
        """What traced memory holds now, and the ``limit`` source lines whose share grew most since the
        last call (the daemon must run with ``PYTHONTRACEMALLOC=N``): how a soak finds what grows."""
        import gc
        import tracemalloc

        if not tracemalloc.is_tracing():
            return {"tracing": False}
        gc.collect()
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(False, tracemalloc.__file__)])
        grown = snapshot.compare_to(heap[0] if heap else tracemalloc.Snapshot([], 1), "traceback")
        heap[:] = [snapshot]
        limit = int((params or {}).get("limit", 10))
        return {"tracing": True, "tracedKiB": tracemalloc.get_traced_memory()[0] // 1024,
                "grown": [{"kiB": round(stat.size_diff / 1024), "count": stat.count_diff,
                           "where": [f"{frame.filename}:{frame.lineno}" for frame in stat.traceback]}
                          for stat in grown[:limit]]}

    @_method(server, "debug/configuration")
    def configuration(params: Any) -> Any:
        return [[kind, value] for kind, value in server.configuration_log]

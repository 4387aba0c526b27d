"""Where the CPU-bound steps of summaries run: never on the event loop, never in the pool that serves reads.

Invariants:
- :func:`in_thread`: a thread pool of its own (:data:`THREADS` threads) for the
  preparation, file lists, facts and requests of compactions; reads use
  asyncio's default pool and do not queue behind them.
- :func:`in_process`: once :func:`use_processes` was called (the daemon's server
  does, at its first request), at most that many worker processes (``spawn``,
  started on first use) for pure Python work that would hold the GIL for long
  (the offline summary); before, in a worker thread (one-shot commands and
  library callers, whose ``__main__`` a spawned process would re-run).
  Arguments and results must pickle; callers send bytes, not object trees,
  so no long pickling runs in this process. The processes run at a lower
  CPU priority (:data:`NICE`), so the daemon's loop is served first, and
  exit within :data:`PARENT_CHECK_SECONDS` of the daemon's end, even a kill.
- A cancelled caller cancels work not started yet and re-raises; work already
  running finishes and its result is dropped.
- A pool broken by a worker that died is replaced, and that call's work runs
  once more in :func:`in_thread`: nothing is lost, only slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # multiprocessing is imported with the first worker process, not at start
    from concurrent.futures import ProcessPoolExecutor

T = TypeVar("T")
THREADS = 1
PROCESSES = 2
log = logging.getLogger("pi_sessiond.summarizers.workers")

_lock = threading.Lock()
_threads: ThreadPoolExecutor | None = None
_processes: ProcessPoolExecutor | None = None
_process_limit = 0
_retired: list[ProcessPoolExecutor] = []  # broken pools, wound down by :func:`shutdown`


def use_processes(count: int = PROCESSES) -> None:
    """Let :func:`in_process` use up to ``count`` worker processes (``0``: threads only)."""
    global _process_limit
    _process_limit = count


def _thread_pool() -> ThreadPoolExecutor:
    global _threads
    with _lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(THREADS, thread_name_prefix="pi-sessiond-heavy")
        return _threads


def uses_processes() -> bool:
    """Whether :func:`in_process` runs its work in worker processes (else in a thread)."""
    return _process_limit > 0


def _process_pool() -> ProcessPoolExecutor:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    global _processes
    with _lock:
        if _processes is None:
            _processes = ProcessPoolExecutor(_process_limit, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_worker_start, initargs=(os.getpid(),))
        return _processes


NICE = 10
"""How much lower the worker processes' CPU priority is: on a busy machine the daemon's loop runs first."""


PARENT_CHECK_SECONDS = 1.0


def _worker_start(parent: int) -> None:
    """In each worker process: a lower priority, and an exit once the daemon is gone (even if killed)."""
    with contextlib.suppress(OSError):
        os.nice(NICE)
    threading.Thread(target=_exit_with, args=(parent,), daemon=True, name="parent-watch").start()


def _exit_with(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_CHECK_SECONDS)
    os._exit(0)


def pid_after(seconds: float) -> int:
    """The pid of the process this ran in, ``seconds`` later (``debug/workers`` keeps every worker busy
    so that each one starts)."""
    time.sleep(seconds)
    return os.getpid()


def _drop_process_pool(broken: ProcessPoolExecutor) -> None:
    """Stop handing work to ``broken``; its manager thread ends it by itself (a dead worker broke it),
    and :func:`shutdown` waits for that thread (``shutdown(wait=False)`` here would forget it)."""
    global _processes
    with _lock:
        if _processes is broken:
            _processes = None
        if broken not in _retired:
            _retired.append(broken)


async def _run(executor: Executor, fn: Callable[..., T], *args: object) -> T:
    future: Future[T] = executor.submit(fn, *args)
    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise


async def in_thread(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in the summaries' own worker threads."""
    return await _run(_thread_pool(), fn, *args)


async def in_process(fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` in a worker process (``fn`` a module-level function); in a thread before
    :func:`use_processes`, or if the pool broke. The pool is made and the work handed to it in the
    summaries' thread: the first hand-over imports ``multiprocessing`` and spawns the processes, which
    would hold the loop."""
    if _process_limit <= 0:
        return await in_thread(fn, *args)
    pool, future = await in_thread(_handed_over, fn, *args)
    from concurrent.futures.process import BrokenProcessPool  # imported by the hand-over

    try:
        return await asyncio.wrap_future(future)
    except asyncio.CancelledError:
        future.cancel()
        raise
    except BrokenProcessPool:
        log.warning("a summary worker process died; running its work in a thread")
        _drop_process_pool(pool)
        return await in_thread(fn, *args)


def _handed_over(fn: Callable[..., T], *args: object) -> tuple[ProcessPoolExecutor, Future[T]]:
    """The pool and ``fn(*args)`` submitted to it; a pool broken before the hand-over is replaced."""
    from concurrent.futures.process import BrokenProcessPool

    pool = _process_pool()
    try:
        return pool, pool.submit(fn, *args)
    except BrokenProcessPool:
        _drop_process_pool(pool)
        pool = _process_pool()
        return pool, pool.submit(fn, *args)


A = TypeVar("A")


async def elsewhere(direct: Callable[[A], T], encode: Callable[[A], bytes], run: Callable[[bytes], T], arg: A) -> T:
    """``run(encode(arg))`` in a worker process when the daemon has them (``encode`` in a worker thread:
    the work crosses as bytes, never as a pickled object tree: ``jsontext.dumps_chunked``), else, or
    when ``encode`` raises ``TypeError`` (a value orjson cannot write), ``direct(arg)`` in a worker
    thread. ``run`` must be a module-level function giving what ``direct`` gives."""
    if uses_processes():
        try:
            payload = await in_thread(encode, arg)
        except TypeError:
            pass
        else:
            return await in_process(run, payload)
    return await in_thread(direct, arg)


SHUTDOWN_GRACE_SECONDS = 3.0
"""How long :func:`shutdown` lets a worker process finish the summary it is in (nobody waits for its
result any more) before it stops the process."""


def shutdown(grace: float = SHUTDOWN_GRACE_SECONDS) -> None:
    """Stop the worker processes and threads (work not started is cancelled). Returns once the process
    pool has wound down: its manager thread is gone and the pipe it wakes through is closed. A pool
    left winding down races the interpreter's exit hook, which writes to that pipe while the manager
    thread closes it (``OSError: Bad file descriptor`` at exit, Python 3.11)."""
    global _threads, _processes
    with _lock:
        threads, processes, _threads, _processes = _threads, _processes, None, None
        pools = [*_retired, *([processes] if processes is not None else [])]
        _retired.clear()
    for pool in pools:
        _wind_down(pool, grace)
    if threads is not None:
        threads.shutdown(wait=False, cancel_futures=True)


def _wind_down(pool: ProcessPoolExecutor, grace: float) -> None:
    """``pool.shutdown(wait=True)``, with the workers still busy after ``grace`` seconds stopped."""
    import multiprocessing

    children = multiprocessing.active_children()  # the pool's workers: the daemon starts no other processes
    waiting = threading.Thread(target=pool.shutdown, kwargs={"wait": True, "cancel_futures": True},
                               daemon=True, name="pi-sessiond-pool-end")
    waiting.start()
    waiting.join(grace)
    if waiting.is_alive():
        log.info("stopping %d summary worker process(es) still at work", len(children))
        for child in children:
            child.terminate()
        waiting.join(grace)  # a stopped worker breaks the pool: its manager thread cleans up and ends

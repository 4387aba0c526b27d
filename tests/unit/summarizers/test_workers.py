"""``summarizers/workers.py``: work handed to worker processes, and what happens when one dies."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import threading
import time
from collections.abc import Iterator

import pytest

from pi_sessiond.summarizers import workers


def dies_in_a_worker(parent: int) -> str:
    """Kills the worker process it runs in; returns where it ran when that is the test's own process."""
    if os.getpid() != parent:
        os._exit(1)
    return "here"


@pytest.fixture
def one_process() -> Iterator[None]:
    workers.use_processes(1)
    try:
        yield
    finally:
        workers.use_processes(0)
        workers.shutdown()


async def test_work_runs_in_a_process_of_its_own(one_process: None) -> None:
    assert await workers.in_process(os.getpid) != os.getpid()


async def test_a_worker_that_dies_is_replaced_and_its_work_runs_in_a_thread(one_process: None) -> None:
    assert await workers.in_process(dies_in_a_worker, os.getpid()) == "here"
    assert await workers.in_process(os.getpid) != os.getpid()  # a new pool serves the next call


async def test_before_use_processes_the_work_runs_in_a_thread() -> None:
    assert await workers.in_process(os.getpid) == os.getpid()


def _pool_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"]


async def test_shutdown_returns_once_the_pool_has_wound_down(one_process: None) -> None:
    """Else the interpreter's exit hook writes to the pool's wake-up pipe while the pool closes it."""
    assert await workers.in_process(os.getpid) != os.getpid()
    assert _pool_threads() and multiprocessing.active_children()
    workers.shutdown()
    assert not _pool_threads() and not multiprocessing.active_children()


async def test_shutdown_stops_a_worker_still_at_work_after_the_grace(one_process: None) -> None:
    started = asyncio.ensure_future(workers.in_process(time.sleep, 60))
    while not multiprocessing.active_children() or not _pool_threads():
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the worker has taken the sleep
    began = time.monotonic()
    workers.shutdown(grace=0.5)
    assert time.monotonic() - began < 10
    assert not _pool_threads() and not multiprocessing.active_children()
    started.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await started


async def test_shutdown_also_winds_down_a_pool_a_dead_worker_broke(one_process: None) -> None:
    assert await workers.in_process(dies_in_a_worker, os.getpid()) == "here"
    assert await workers.in_process(os.getpid) != os.getpid()
    workers.shutdown()
    assert not _pool_threads() and not multiprocessing.active_children()

"""``summarizers/workers.py``: work handed to worker processes, and what happens when one dies."""

from __future__ import annotations

import os
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

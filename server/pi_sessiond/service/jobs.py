"""Summarizer jobs: at most one per session, a global limit, visible state.

Invariants:
- A session has at most one running job; starting a second raises
  :class:`Busy`, as does starting one while ``limit()`` jobs run in total.
  The check and the registration happen in one synchronous step, so two
  requests cannot both pass it.
- Every job is an asyncio task held by a strong reference until it finishes;
  a failure of a background job is logged (a request's job fails into its
  request instead).
- Cancelling the request that awaits :meth:`JobManager.run` cancels the job
  task itself (``await`` on a task forwards the cancellation), and the request
  sees ``CancelledError`` once the job has cleaned up.
- A job started with ``yields`` (the background draft of ``compaction.prepareAt``)
  gives its slot to any other job: starting one for its session, or beyond
  ``limit()`` while it runs, cancels it (it is dropped from the table at once
  and cleans up on its own), and :meth:`JobManager.check` does not count it.
- Reads and appends never wait for jobs: nothing here takes a lock.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

import attrs

from pi_sessiond.errors import Busy

T = TypeVar("T")
JobKind = Literal["compaction", "branchSummary"]
log = logging.getLogger("pi_sessiond.service.jobs")
_IDS = itertools.count(1)


@attrs.define(eq=False)
class Job:
    """One running (or finished) summarizer job."""

    session_id: str
    kind: JobKind
    reason: str
    started: float  # time.time() when it started
    task: asyncio.Task[object] = attrs.field(repr=False)
    background: bool = False
    yields: bool = False
    id: str = attrs.field(factory=lambda: f"job-{next(_IDS)}")

    @property
    def state(self) -> str:
        """``running``, ``cancelled``, ``failed`` or ``done``."""
        if not self.task.done():
            return "running"
        if self.task.cancelled():
            return "cancelled"
        return "failed" if self.task.exception() is not None else "done"


class JobManager:
    """Starts, tracks and cancels summarizer jobs."""

    def __init__(self, limit: Callable[[], int]) -> None:
        self._limit = limit
        self._jobs: dict[str, Job] = {}

    def get(self, session_id: str) -> Job | None:
        """The running job of ``session_id``, if any."""
        return self._jobs.get(session_id)

    def running(self) -> list[Job]:
        """Every running job."""
        return list(self._jobs.values())

    def check(self, session_id: str) -> None:
        """Raise :class:`Busy` if a job could not start for ``session_id`` now."""
        current = self._jobs.get(session_id)
        if current is not None and not current.yields:
            raise Busy(
                f"a {current.kind} ({current.reason}) is already running for this session",
                data={"kind": current.kind, "jobReason": current.reason},
            )
        limit = max(1, self._limit())
        holding = sum(1 for job in self._jobs.values() if not job.yields)
        if holding >= limit:
            raise Busy(f"{holding} summaries are running (daemon.maxConcurrentSummaries is {limit})")

    def start(
        self,
        session_id: str,
        kind: JobKind,
        reason: str,
        work: Callable[[], Awaitable[T]],
        *,
        background: bool = False,
        yields: bool = False,
    ) -> Job:
        """Start ``work()`` as a job; raises :class:`Busy` (and never calls ``work``) when it cannot.

        A ``yields`` job starts only in a free slot; any other job makes room by cancelling yielding ones.
        """
        if yields:
            if session_id in self._jobs or len(self._jobs) >= max(1, self._limit()):
                raise Busy("no free summarizer slot for a background draft")
        else:
            self.check(session_id)
            self._make_room(session_id)
        task: asyncio.Task[object] = asyncio.ensure_future(work())
        job = Job(session_id=session_id, kind=kind, reason=reason, started=time.time(), task=task,
                  background=background, yields=yields)
        self._jobs[session_id] = job
        task.add_done_callback(lambda t: self._finished(job))
        return job

    async def run(
        self, session_id: str, kind: JobKind, reason: str, work: Callable[[], Awaitable[T]]
    ) -> T:
        """Run ``work()`` as this session's job and return its result (a request's job)."""
        job = self.start(session_id, kind, reason, work)
        result: T = await job.task  # type: ignore[assignment]
        return result

    def _make_room(self, session_id: str) -> None:
        """Cancel the yielding jobs in the way of a new job of ``session_id`` (its own, then the oldest)."""
        current = self._jobs.get(session_id)
        if current is not None and current.yields:
            self._drop(current)
        limit = max(1, self._limit())
        for job in [j for j in self._jobs.values() if j.yields]:
            if len(self._jobs) < limit:
                break
            self._drop(job)

    def _drop(self, job: Job) -> None:
        log.info("the background %s of %s yields its slot", job.reason, job.session_id)
        job.task.cancel()
        del self._jobs[job.session_id]

    def _finished(self, job: Job) -> None:
        if self._jobs.get(job.session_id) is job:
            del self._jobs[job.session_id]
        if job.background and not job.task.cancelled():
            exc = job.task.exception()
            if exc is not None:
                log.error("background %s of %s failed", job.kind, job.session_id, exc_info=exc)

    async def settled(self, session_id: str) -> None:
        """Return once no compaction job of ``session_id`` runs (a yielding background draft is not waited
        for); cancelling the caller stops only the wait, never the job."""
        while (job := self._jobs.get(session_id)) is not None and not job.yields and job.kind == "compaction":
            await asyncio.wait([job.task])  # never raises the job's error

    async def cancel(self, session_id: str) -> None:
        """Cancel the job of ``session_id`` (if any) and wait for it to clean up."""
        job = self._jobs.get(session_id)
        if job is not None:
            await _cancel_and_wait([job.task])

    async def cancel_all(self) -> None:
        """Cancel every job and wait for them (shutdown)."""
        await _cancel_and_wait([job.task for job in self._jobs.values()])


async def _cancel_and_wait(tasks: list[asyncio.Task[object]]) -> None:
    for task in tasks:
        task.cancel()
    if tasks:
        await asyncio.gather(*tasks, return_exceptions=True)

"""Running summary jobs: turning prepared messages into summary text with a summarizer.

The requests themselves are built in :mod:`pi_sessiond.pipeline.requests`;
this module sends them.

Contracts:
- A split turn's summaries run one after the other, history then turn prefix
  (Pi 1.6.0), or concurrently in one ``TaskGroup`` with
  ``summarizer.parallelSplitTurn``; they are merged with Pi's separator. With
  no history request the history part is the jobs' ``head`` (the previous
  summary kept as it is, or ``No prior history.``).
- Every call goes through the one retry layer
  (:func:`pi_sessiond.summarizers.retry.with_retries`, ``retry.*``); each
  retry is reported to :attr:`RunOptions.on_retry` before its wait.
- A context-length error from the summarizer's *own* request is not fatal:
  the oldest serialized messages are dropped (a quarter at a time, at most
  :data:`MAX_SHRINKS` times) and the request is built and sent again, so a
  session too big for the summarizer still compacts (the deadlock users of
  other agents report cannot happen here).
- An answer that stopped at its output limit or called a tool is never used:
  :class:`~pi_sessiond.errors.SummaryIncomplete` at once (not asked again).
- Every other answer is validated: non-empty and, for structured formats,
  every heading of its job present; a failing answer is asked for once more,
  then a :class:`SummaryValidationError` is raised. Nothing here writes anything.
- Cancellation propagates untouched (the summarizer closes its stream).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from pi_protocol import Cost, Usage
from pi_protocol.settings import RetrySettings
from pi_sessiond.compaction.prompts import merge_split_turn
from pi_sessiond.errors import SummaryIncomplete
from pi_sessiond.pipeline.requests import CompactionJobs, OutputLimit, SummaryJob
from pi_sessiond.summarizers.base import Summarizer, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError
from pi_sessiond.summarizers.retry import RetryCallback, with_retries

JsonDict = dict[str, Any]
TokensCallback = Callable[[int], None]

MAX_SHRINKS = 4
_LABELS = {"history": "summary", "turnPrefix": "turn-prefix summary", "branch": "branch summary"}


@attrs.frozen(kw_only=True)
class RunOptions:
    """How summary jobs are run (from the settings in force; the defaults are Pi 1.6.0's).

    ``limit`` is what the output limits are made of (``None``: only the
    summarizer's window is known); ``retry`` is ``retry.*``;
    ``parallel_split_turn`` is ``summarizer.parallelSplitTurn``; ``on_retry``
    hears of every retry before its wait (the daemon's ``$/progress``).
    """

    limit: OutputLimit | None = None
    retry: RetrySettings = attrs.field(factory=RetrySettings)
    parallel_split_turn: bool = False
    on_retry: RetryCallback | None = None

    def limit_for(self, summarizer: Summarizer) -> OutputLimit:
        """``limit``, or one made of ``summarizer``'s window alone."""
        return self.limit or OutputLimit(context_window=summarizer.context_window)


class SummaryValidationError(SummarizerError):
    """The summarizer's answer was unusable twice in a row."""


@attrs.frozen(kw_only=True)
class SummaryText:
    """A finished summary and the combined usage of the calls that made it."""

    text: str
    usage: Usage
    dropped_messages: int = 0


def add_usage(a: Usage, b: Usage) -> Usage:
    """The sum of two usages (cost included)."""
    cost = Cost(
        input=a.cost.input + b.cost.input,
        output=a.cost.output + b.cost.output,
        cache_read=a.cost.cache_read + b.cost.cache_read,
        cache_write=a.cost.cache_write + b.cost.cache_write,
        total=a.cost.total + b.cost.total,
    )
    return Usage(
        input=a.input + b.input,
        output=a.output + b.output,
        cache_read=a.cache_read + b.cache_read,
        cache_write=a.cache_write + b.cache_write,
        total_tokens=a.total_tokens + b.total_tokens,
        cost=cost,
    )


def missing_headings(text: str, headings: Sequence[str]) -> list[str]:
    """The required headings that do not start a line of ``text``."""
    lines = {line.strip() for line in text.splitlines()}
    return [h for h in headings if h not in lines]


async def run_job(
    summarizer: Summarizer,
    job: SummaryJob,
    progress: TokensCallback | None = None,
    options: RunOptions | None = None,
) -> SummaryText:
    """One summary: shrink on context-length errors, refuse incomplete answers, validate, ask once more."""
    options = options or RunOptions()
    messages = list(job.messages)
    dropped = 0
    for _ in range(MAX_SHRINKS + 1):
        try:
            # Serializing a long conversation is CPU work: keep it off the event loop.
            request = await asyncio.to_thread(job.request, messages)
            result = await _validated(summarizer, job, request, progress, options)
        except ContextLengthError:
            cut = max(1, len(messages) // 4)
            if len(messages) <= 1:
                raise
            messages = messages[cut:]
            dropped += cut
            continue
        return SummaryText(text=result.text, usage=result.usage, dropped_messages=dropped)
    raise ContextLengthError(
        f"the summarizer's context is too small even after dropping the oldest {dropped} messages"
    )


async def _validated(
    summarizer: Summarizer,
    job: SummaryJob,
    request: SummaryRequest,
    progress: TokensCallback | None,
    options: RunOptions,
) -> SummaryResult:
    problem = ""
    for _attempt in range(2):
        result = await with_retries(
            lambda: summarizer.summarize(request, progress=progress), options.retry, options.on_retry
        )
        refuse_incomplete(job, result)
        problem = _problem(result.text, job.headings)
        if not problem:
            return result
    raise SummaryValidationError(f"the summarizer's answer was unusable twice: {problem}")


def refuse_incomplete(job: SummaryJob, result: SummaryResult) -> None:
    """:class:`SummaryIncomplete` when ``result`` stopped at its output limit or called a tool."""
    label = _LABELS[job.purpose]
    if result.stop_reason == "length":
        message = f"the {label} hit the output-token limit and is incomplete; nothing was written"
    elif result.stop_reason == "toolUse":
        message = f"the summarizer tried to call a tool instead of writing the {label}; nothing was written"
    else:
        return
    raise SummaryIncomplete(message, data={"purpose": job.purpose, "stopReason": result.stop_reason})


def _problem(text: str, headings: Sequence[str]) -> str:
    if not text.strip():
        return "empty summary"
    missing = missing_headings(text, headings)
    return f"missing headings {', '.join(missing)}" if missing else ""


async def summarize_compaction(
    summarizer: Summarizer,
    jobs: CompactionJobs,
    progress: TokensCallback | None = None,
    options: RunOptions | None = None,
) -> SummaryText:
    """A compaction summary: history (then turn prefix) merged like Pi."""
    options = options or RunOptions()
    if jobs.turn_prefix is None:
        if jobs.history is None:
            raise ValueError("a compaction without a history or turn-prefix job")
        return await run_job(summarizer, jobs.history, progress, options)
    counts = [0, 0]

    def report(slot: int) -> TokensCallback:
        def update(n: int) -> None:
            counts[slot] = n
            if progress is not None:
                progress(sum(counts))

        return update

    if options.parallel_split_turn:
        head, tail = await _concurrently(summarizer, jobs, report, options)
    else:
        head = await run_job(summarizer, jobs.history, report(0), options) if jobs.history else _kept(jobs)
        tail = await run_job(summarizer, jobs.turn_prefix, report(1), options)
    return SummaryText(
        text=merge_split_turn(head.text, tail.text),
        usage=add_usage(head.usage, tail.usage),
        dropped_messages=head.dropped_messages + tail.dropped_messages,
    )


def _kept(jobs: CompactionJobs) -> SummaryText:
    return SummaryText(text=jobs.head, usage=Usage())


async def _concurrently(
    summarizer: Summarizer, jobs: CompactionJobs, report: Callable[[int], TokensCallback], options: RunOptions
) -> tuple[SummaryText, SummaryText]:
    assert jobs.turn_prefix is not None
    try:
        async with asyncio.TaskGroup() as group:
            history = jobs.history
            history_task = group.create_task(run_job(summarizer, history, report(0), options)) if history else None
            prefix_task = group.create_task(run_job(summarizer, jobs.turn_prefix, report(1), options))
    except BaseExceptionGroup as failed:
        # Callers handle one summarizer failure, not a group: re-raise the first real one.
        raise _first_error(failed) from failed
    return (history_task.result() if history_task else _kept(jobs)), prefix_task.result()


def _first_error(group: BaseExceptionGroup[BaseException]) -> BaseException:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            return _first_error(exc)
        if not isinstance(exc, asyncio.CancelledError):
            return exc
    return group.exceptions[0]

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
- A context-length error from the summarizer's *own* request is not fatal
  and drops nothing: the range is summarized in chunks (2, 4, … up to
  :data:`MAX_CHUNKS` of about equal tokens), oldest first, each folded into
  the running summary (a history update whose previous summary is the
  running one; the last chunk is the job's own request, with the running
  summary before its messages where the format has no previous summary).
  :attr:`SummaryText.chunks` says how many.
- An answer that stopped at its output limit or called a tool is never used:
  :class:`~pi_sessiond.errors.SummaryIncomplete` at once (not asked again).
- An empty answer is asked for once more, then :class:`SummaryValidationError`.
  Any other answer is used: its headings are normalized and the fidelity
  gate (:mod:`pi_sessiond.summarizers.gate`) adds the hard facts of the
  job's whole range it lacks, and those the summaries it replaces carried
  (:func:`job_facts`: the previous summary's constraints, decisions, open
  TODOs, identifiers, last error and request — the later wins), as
  :attr:`SummaryText.gate`, before anything is shown or written. Nothing here writes anything.
- With :attr:`RunOptions.replay` (``summarizer.cacheReuse: "auto"``) a
  history job first asks :mod:`~pi_sessiond.pipeline.cachereuse` for its
  request's shape. A replay answer that called a tool, stopped at its limit,
  is empty or lacks the structured headings (or a replay the window refuses)
  is asked once more serialized; both usages count. A replayed summary goes
  through the same heading normalization and fidelity gate. The plan is told
  to :attr:`RunOptions.on_plan` and kept in :attr:`SummaryText.plan`.
- Cancellation propagates untouched (the summarizer closes its stream).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Sequence

import attrs
import orjson

from pi_protocol import Cost, RequestPlan, Usage
from pi_protocol.base import JsonDict
from pi_protocol.settings import RetrySettings
from pi_sessiond.compaction.prompts import merge_split_turn
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.errors import SummaryIncomplete
from pi_sessiond.jsonio.jsontext import dumps_chunked
from pi_sessiond.pipeline.cachereuse import ReplaySource
from pi_sessiond.pipeline.requests import CompactionJobs, OutputLimit, SummaryJob
from pi_sessiond.summarizers import workers
from pi_sessiond.summarizers.base import Summarizer, SummaryRequest, SummaryResult, reads_prompt
from pi_sessiond.summarizers.carry import carry_forward
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError
from pi_sessiond.summarizers.facts import Facts, extract_facts
from pi_sessiond.summarizers.gate import Added, repair
from pi_sessiond.summarizers.headings import normalize
from pi_sessiond.summarizers.pricing import ModelPrice, priced
from pi_sessiond.summarizers.retry import RetryCallback, with_retries

log = logging.getLogger("pi_sessiond.pipeline")
TokensCallback = Callable[[int], None]

MAX_CHUNKS = 16
_LABELS = {"history": "summary", "turnPrefix": "turn-prefix summary", "branch": "branch summary"}


@attrs.frozen(kw_only=True)
class RunOptions:
    """How summary jobs are run (from the settings in force; the defaults are Pi 1.6.0's).

    ``limit`` is what the output limits are made of (``None``: only the
    summarizer's window is known); ``retry`` is ``retry.*``;
    ``parallel_split_turn`` is ``summarizer.parallelSplitTurn``; ``on_retry``
    hears of every retry before its wait (the daemon's ``$/progress``);
    ``price`` is the summarizer model's, each answer's ``usage.cost`` is filled in at it;
    ``replay`` makes a history request cache-aware (``None``: always serialized),
    ``on_plan`` hears of its plan.
    """

    limit: OutputLimit | None = None
    retry: RetrySettings = attrs.field(factory=RetrySettings)
    parallel_split_turn: bool = False
    on_retry: RetryCallback | None = None
    price: ModelPrice | None = None
    replay: ReplaySource | None = None
    on_plan: Callable[[RequestPlan], None] | None = None

    def limit_for(self, summarizer: Summarizer) -> OutputLimit:
        """``limit``, or one made of ``summarizer``'s window alone."""
        return self.limit or OutputLimit(context_window=summarizer.context_window)


class SummaryValidationError(SummarizerError):
    """The summarizer's answer was unusable twice in a row."""


@attrs.frozen(kw_only=True)
class SummaryText:
    """A finished summary, the combined usage of the calls that made it, what the gate added.

    ``chunks`` is how many pieces the range was summarized in (1: at once).
    """

    text: str
    usage: Usage
    gate: tuple[Added, ...] = ()
    chunks: int = 1
    plan: RequestPlan | None = None


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
    """One summary: replayed when cheaper, chunked on context-length errors, incomplete answers refused,
    repaired by the gate."""
    options = options or RunOptions()
    facts = await workers.elsewhere(job_facts, _facts_payload, facts_from_payload, job)
    plan, spent = None, Usage()
    if options.replay is not None and job.purpose == "history":
        plan = options.replay.plan(await workers.in_thread(job.request))
        if options.on_plan is not None:
            options.on_plan(plan)
        if plan.shape == "replay":
            replayed, spent = await _replayed(summarizer, job, facts, plan, progress, options)
            if replayed is not None:
                return replayed
            plan = attrs.evolve(plan, shape="serialized", reason="the replayed answer was unusable")
    parts = 1
    while True:
        try:
            text = await _in_chunks(summarizer, job, facts, parts, progress, options)
            return attrs.evolve(text, usage=add_usage(spent, text.usage), plan=plan)
        except ContextLengthError:
            if parts * 2 > min(MAX_CHUNKS, len(job.messages)):
                raise
            parts *= 2
            log.info("the %s range does not fit the summarizer's window: summarizing it in %d chunks",
                     job.purpose, parts)


async def _replayed(
    summarizer: Summarizer, job: SummaryJob, facts: Facts, plan: RequestPlan, progress: TokensCallback | None,
    options: RunOptions,
) -> tuple[SummaryText | None, Usage]:
    """The replayed summary, or ``None`` when its answer is unusable; the usage it cost either way."""
    assert options.replay is not None
    request = job.request()
    body = options.replay.body(request, plan, job.instructions)
    try:
        result = await with_retries(
            lambda: summarizer.summarize(attrs.evolve(request, body=body), progress=progress),
            options.retry, options.on_retry,
        )
    except ContextLengthError:
        log.info("the replayed request did not fit the summarizer's window: asking serialized")
        return None, Usage()
    usage = priced(result.usage, options.price)
    lacking = [h for h in normalize(result.text, job.headings).added_headings if h.startswith("## ")]
    if result.stop_reason != "stop" or not result.text.strip() or lacking:
        log.info("the replayed answer was unusable (stop %s, %d headings missing): asking serialized",
                 result.stop_reason, len(lacking))
        return None, usage
    repaired = repair(result.text, facts, job.purpose, job.headings)
    return SummaryText(text=repaired.text, usage=usage, gate=repaired.added, plan=plan), usage


def job_facts(job: SummaryJob) -> Facts:
    """What the gate requires of ``job``'s summary: the range's hard facts and those of the summaries it
    replaces (its previous summary, branch summaries inside the range: :mod:`~pi_sessiond.summarizers.carry`),
    taken from ``job.facts_from`` when it is set (a branch summary: the whole branch and its abandoned request)."""
    return carry_forward(extract_facts(job.facts_from or job.messages), job.previous_summary, job.messages)


def _facts_payload(job: SummaryJob) -> bytes:
    """What :func:`job_facts` reads of ``job``, as JSON bytes (``TypeError`` for a value orjson cannot write)."""
    head = orjson.dumps({"previousSummary": job.previous_summary, "factsFrom": bool(job.facts_from)})
    return b"\n".join([head, dumps_chunked(job.messages), dumps_chunked(job.facts_from)])


def facts_from_payload(payload: bytes) -> Facts:
    """:func:`job_facts` of a job sent by :func:`_facts_payload` (runs in a worker process)."""
    head, messages, facts_from = payload.split(b"\n", 2)
    fields = orjson.loads(head)
    history = tuple(orjson.loads(messages))
    source = tuple(orjson.loads(facts_from)) if fields["factsFrom"] else history
    return carry_forward(extract_facts(source), fields["previousSummary"], history)


def split_evenly(messages: Sequence[JsonDict], parts: int) -> list[tuple[JsonDict, ...]]:
    """``messages`` in at most ``parts`` consecutive non-empty chunks of about equal estimated tokens."""
    sizes = [max(1, estimate_tokens(m)) for m in messages]
    total, seen = sum(sizes), 0
    chunks: list[tuple[JsonDict, ...]] = []
    current: list[JsonDict] = []
    for message, size in zip(messages, sizes, strict=True):
        current.append(message)
        seen += size
        if seen * parts >= total * (len(chunks) + 1) and len(chunks) < parts - 1:
            chunks.append(tuple(current))
            current = []
    if current:
        chunks.append(tuple(current))
    return chunks


async def _in_chunks(
    summarizer: Summarizer,
    job: SummaryJob,
    facts: Facts,
    parts: int,
    progress: TokensCallback | None,
    options: RunOptions,
) -> SummaryText:
    chunks = split_evenly(job.messages, parts) if parts > 1 else [job.messages]
    running, usage = job.previous_summary, Usage()
    for chunk in chunks[:-1]:
        fold = attrs.evolve(job, purpose="history", messages=chunk, previous_summary=running)
        result = await _answer(summarizer, fold, await _request(summarizer, fold), progress, options)
        running, usage = repair(result.text, Facts(), "history", fold.headings).text, add_usage(usage, result.usage)
    last = _last_chunk(job, chunks[-1], running, folded=len(chunks) > 1)
    result = await _answer(summarizer, last, await _request(summarizer, last), progress, options)
    repaired = repair(result.text, facts, job.purpose, job.headings)
    usage = add_usage(usage, result.usage)
    return SummaryText(text=repaired.text, usage=usage, gate=repaired.added, chunks=len(chunks))


async def _request(summarizer: Summarizer, job: SummaryJob) -> SummaryRequest:
    """``job``'s request, made in a worker thread; its prompt only when ``summarizer`` reads it."""
    return await workers.in_thread(functools.partial(job.request, with_prompt=reads_prompt(summarizer)))


def _last_chunk(job: SummaryJob, chunk: tuple[JsonDict, ...], running: str | None, *, folded: bool) -> SummaryJob:
    if not folded:
        return job
    if job.purpose == "history" or running is None:
        return attrs.evolve(job, messages=chunk, previous_summary=running)
    carried = {"role": "compactionSummary", "summary": running, "timestamp": 0}
    return attrs.evolve(job, messages=(carried, *chunk))


async def _answer(
    summarizer: Summarizer,
    job: SummaryJob,
    request: SummaryRequest,
    progress: TokensCallback | None,
    options: RunOptions,
) -> SummaryResult:
    """The summarizer's answer to ``request``: not incomplete, not empty (one more try for that).

    Its usage is that of every answer it took (an empty first answer is paid for too), priced."""
    spent = Usage()
    for _attempt in range(2):
        result = await with_retries(
            lambda: summarizer.summarize(request, progress=progress), options.retry, options.on_retry
        )
        refuse_incomplete(job, result)
        spent = add_usage(spent, priced(result.usage, options.price))
        if result.text.strip():
            return attrs.evolve(result, usage=spent)
    raise SummaryValidationError("the summarizer's answer was empty twice")


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
        gate=head.gate + tail.gate,
        chunks=head.chunks + tail.chunks - 1,
        plan=head.plan,
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

"""The compaction pipeline: prepare -> summarize -> validate -> re-check -> commit one entry.

Contracts:
- Pure preparation first (``compaction.prepare``); nothing to summarize is an
  error (:class:`NothingToCompact`) instead of Pi 0.73.1's request for a
  summary of an empty conversation (newer Pi refuses too).
- The summary is repaired by the fidelity gate (see ``pipeline.summaries``)
  and must shrink the context: written only if ``estimatedTokensAfter <=
  SHRINK_RATIO x`` the same estimate of the context before (a model is asked once more), else
  :class:`NotShrinking` and nothing written. A person's edit (``review``) is
  checked the same way, never gated.
- File lists (:mod:`pipeline.filelists`): Pi's cumulative lists plus the
  files the range changed through bash (a named deviation,
  ``test_fix_bash_file_ops_are_tracked``, in the summary and ``details``);
  the summary's lists are capped, never dropping a file modified in the range.
- Hook points for the daemon: ``supply`` may hand in a finished entry (a
  ``pi/beforeCompact`` hook; no summarizer call then) and ``review`` may edit
  or reject the summary before it is written (``pi/reviewSummary``).
- Before writing, the leaf is re-checked after the lines other programs
  appended were folded in (the store's leaf follows them when they continue
  it; ``Session.append``'s ``verify``, so the check and the write see the same
  file): the entry is written on the newest leaf when that is the prepared one
  or continues it without another compaction (entries appended meanwhile then
  sit between the kept ones and the compaction and stay in its context, so
  nothing is orphaned); any other move is :class:`Conflict`. Exactly one
  ``compaction`` entry is appended, in one line, only after everything
  succeeded, so a failure or cancellation earlier leaves the file untouched.
- The entry is written as Pi 1.6.0's ``appendCompaction`` writes it
  (:func:`write_compaction`): ``summary, firstKeptEntryId, tokensBefore,
  details, usage, fromHook, systemMessage``, with ``usage`` the summarization
  calls' (an oversized first answer's included), the ``systemMessage``
  checkpoint when the leaf's projection has system messages, and a
  ``firstKeptEntryId`` of ``null`` (only a hook asks for that) written as the
  entry's own id: a retain-none compaction.
- ``estimatedTokensAfter`` is Pi 1.6.0's: every message of the rebuilt
  projection estimated, no usage figures (they describe the old context).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs

from pi_protocol import CompactionEntry, CompactionPreview, FileDetails, RequestPlan, Usage, structure, unstructure
from pi_protocol.base import JsonDict
from pi_protocol.compaction import SummaryRequestView
from pi_sessiond.compaction.prepare import CompactionPreparation, Prepared, prepare_compaction
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.errors import Conflict, NothingToCompact, NotShrinking
from pi_sessiond.pipeline.filelists import RangeFiles, range_files
from pi_sessiond.pipeline.requests import OutputLimit, compaction_jobs, compaction_requests
from pi_sessiond.pipeline.summaries import (
    RunOptions,
    SummaryText,
    add_usage,
    summarize_compaction,
)
from pi_sessiond.store.building import Completer
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.layout import iso_ms, now_iso
from pi_sessiond.store.projection import project_path
from pi_sessiond.store.session import Session
from pi_sessiond.store.system import current_system_message
from pi_sessiond.summarizers import workers
from pi_sessiond.summarizers.base import Summarizer, SummaryRequest
from pi_sessiond.summarizers.gate import Added

SHRINK_RATIO = 0.9


Progress = Callable[[str, int | None], None]
"""``progress(message, percentage)``: phases for a progress bar."""

Supplier = Callable[[CompactionPreparation], Awaitable[JsonDict | None]]
"""Returns a finished compaction entry to store instead of summarizing, or ``None``."""

Reviewer = Callable[[str, int, int], Awaitable[str]]
"""``review(summary, tokens_before, estimated_tokens_after)`` -> the summary to write (or raises)."""


@attrs.frozen(kw_only=True)
class CompactionDone:
    """The compaction written: its entry, and the sizes the wire's ``CompactResult`` is made of.

    ``tokens_after`` is Pi 1.6.0's ``estimatedTokensAfter``.

    ``usage`` is the summarizer's, or a hook's (``None`` when it gave none).
    """

    entry: Entry
    tokens_before: int
    tokens_after: int
    usage: Usage | None
    gate: tuple[Added, ...] = ()
    chunks: int = 1
    plan: RequestPlan | None = None


def prepare_or_refuse(session: Session, settings: CompactionSettings) -> CompactionPreparation:
    """The preparation of the leaf's path, or :class:`NothingToCompact`."""
    path = session.path_to()
    return _refuse_or(path, prepare_compaction(path, settings, session.projection()))


async def prepare_off_loop(session: Session, settings: CompactionSettings) -> CompactionPreparation:
    """:func:`prepare_or_refuse` with the pure, CPU-bound part in a worker thread.

    The path and the projection are snapshots taken on the event loop (appends only
    add entries, never change these), so the preparation can run beside other
    requests instead of blocking them (a 100k-entry path takes ~0.1 s).
    """
    path = session.path_to()
    projection = session.projection()
    prep = await workers.in_thread(prepare_compaction, path, settings, projection)
    return _refuse_or(path, prep)


def refusal(path: list[Entry]) -> str:
    """Pi's reason for returning no preparation of ``path``."""
    return "Already compacted" if path and path[-1].type == "compaction" else "Nothing to compact (session too small)"


def _refuse_or(path: list[Entry], prep: CompactionPreparation | None) -> CompactionPreparation:
    if prep is None:
        raise NothingToCompact(refusal(path))
    return prep


async def compact(
    session: Session,
    summarizer: Summarizer,
    *,
    settings: CompactionSettings | None = None,
    custom_instructions: str | None = None,
    progress: Progress | None = None,
    supply: Supplier | None = None,
    review: Reviewer | None = None,
    options: RunOptions | None = None,
    prepared: Prepared | None = None,
) -> CompactionDone:
    """Compact the leaf's path and append one compaction entry (``options``: how summaries are asked for).

    ``prepared``: the preparation already made of the path to its leaf; the entry is then written only if
    the leaf is still that one or continues it.
    """
    settings = settings or CompactionSettings()
    report = progress or _ignore
    report("preparing", 0)
    if prepared is None:
        leaf_before = session.leaf_id
        prep = await prepare_off_loop(session, settings)
    else:
        leaf_before, prep = prepared.leaf_id, prepared.prep
    data = await supply(prep) if supply is not None else None
    summary: SummaryText | None = None
    if data is None:
        count = len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)
        report(f"summarizing {count} messages", 5)
        files = await workers.in_thread(range_files, prep)
        summary = await _sized_summary(session, summarizer, prep, files, custom_instructions, report, options)
        data = compaction_entry(prep, summary.text, summary.usage, files)
        if review is not None:
            text = await review(summary.text, prep.tokens_before, pending_tokens(session, data))
            data = compaction_entry(prep, text, summary.usage, files)
            check_shrinks(session, prep, data)
    report("writing", 95)
    entry = await workers.in_thread(  # under the session's lock: its checkpoint scans a long context
        lambda: write_compaction(session, data, verify=lambda: check_descends(session, leaf_before)))
    report("done", 100)
    return CompactionDone(
        entry=entry,
        tokens_before=int(entry.data.get("tokensBefore") or 0),
        tokens_after=estimated_tokens_after(session),
        usage=summary.usage if summary is not None else hooked_usage(entry),
        gate=summary.gate if summary is not None else (),
        chunks=summary.chunks if summary is not None else 0,
        plan=summary.plan if summary is not None else None,
    )


def write_compaction(session: Session, data: JsonDict, verify: Callable[[], None] | None = None) -> Entry:
    """Append the compaction ``data`` at the leaf as Pi 1.6.0's ``appendCompaction`` does.

    The checkpoint is the current system message of the leaf's projection
    (which starts with the previous checkpoint, so checkpoints chain) with the
    entry's own time in ms; none when the projection has no system message.
    A ``firstKeptEntryId`` of ``None`` becomes the entry's own id (retain-none).
    ``verify`` is the leaf re-check, run after other writers' lines were folded in.
    """
    return session.append([data], complete=completer(session), verify=verify)[0]


def completer(session: Session) -> Completer:
    """What :func:`write_compaction` adds to a compaction at the leaf once its id and time are known
    (the checkpoint is read then, from the leaf the entry is written on)."""

    def complete(_position: int, full: JsonDict) -> JsonDict:
        checkpoint = current_system_message(session.projection().messages)
        if full.get("firstKeptEntryId") is None:
            full["firstKeptEntryId"] = full["id"]
        if checkpoint is not None:
            full["systemMessage"] = {**checkpoint, "timestamp": iso_ms(str(full["timestamp"]))}
        return full

    return complete


def estimated_tokens_after(session: Session) -> int:
    """Pi 1.6.0's ``estimatedTokensAfter``: every message of the leaf's projection estimated, no usage."""
    return sum(estimate_tokens(m) for m in session.projection().messages)


def hooked_usage(entry: Entry) -> Usage | None:
    """The usage a hook's compaction carries (``None`` without one)."""
    usage = entry.data.get("usage")
    return structure(usage, Usage) if isinstance(usage, dict) else None


async def summarize_prepared(
    session: Session,
    summarizer: Summarizer,
    prep: CompactionPreparation,
    instructions: str | None,
    report: Progress | None = None,
    options: RunOptions | None = None,
) -> SummaryText:
    """The summary :func:`compact` would write for ``prep`` (file lists appended, fidelity gate run, size
    checked); writes nothing."""
    files = await workers.in_thread(range_files, prep)
    return await _sized_summary(session, summarizer, prep, files, instructions, report or _ignore, options)


async def _sized_summary(
    session: Session,
    summarizer: Summarizer,
    prep: CompactionPreparation,
    files: RangeFiles,
    instructions: str | None,
    report: Progress,
    options: RunOptions | None,
) -> SummaryText:
    """The summary with its file lists; one that does not shrink the context is asked for once more
    (both usages count), then :class:`NotShrinking`. The offline summarizer is not asked twice."""
    spent = Usage()
    attempts = 1 if summarizer.name == "offline" else 2
    for attempt in range(attempts):
        summary = await _summarize(session, summarizer, prep, instructions, report, options or RunOptions())
        spent = add_usage(spent, summary.usage)
        text = summary.text + files.block
        gate = summary.gate + tuple(Added("modifiedFile", p) for p in files.bash_modified)
        try:
            await workers.in_thread(_check_shrinks_locked, session, prep, compaction_entry(prep, text, spent, files))
        except NotShrinking:
            if attempt == attempts - 1:
                raise
            continue
        return SummaryText(text=text, usage=spent, gate=gate, chunks=summary.chunks, plan=summary.plan)
    raise AssertionError("unreachable")


def check_shrinks(session: Session, prep: CompactionPreparation, data: JsonDict) -> None:
    """:class:`NotShrinking` unless writing ``data`` leaves at most ``SHRINK_RATIO`` of the context.

    Before and after are the same measure, the estimate of every message of
    the leaf's context (Pi's ``estimatedTokensAfter``). Pi's ``tokensBefore``
    (written in the entry) counts the last answer's usage instead: above the
    estimate it would let a summary that grows the context through, below it
    a shrinking one look like growth.
    """
    after = pending_tokens(session, data)
    before = estimated_tokens_after(session)
    if after > SHRINK_RATIO * before:
        raise NotShrinking(
            f"the compaction would leave {after} of {before} tokens "
            f"(more than {SHRINK_RATIO:.0%}); nothing was written",
            data={"tokensBefore": before, "tokensAfter": after},
        )


def _check_shrinks_locked(session: Session, prep: CompactionPreparation, data: JsonDict) -> None:
    """:func:`check_shrinks` in a worker thread: estimating a long context takes a while, appends wait for it."""
    with session.lock:
        check_shrinks(session, prep, data)


async def _summarize(
    session: Session,
    summarizer: Summarizer,
    prep: CompactionPreparation,
    instructions: str | None,
    report: Progress,
    options: RunOptions,
) -> SummaryText:
    jobs = compaction_jobs(prep, instructions, session_reasoning(session), options.limit_for(summarizer))
    return await summarize_compaction(
        summarizer, jobs, progress=lambda n: report(f"{n} tokens streamed", streamed_percentage(n)), options=options
    )


def session_reasoning(session: Session) -> str | None:
    """The session's thinking level as a summary request's ``reasoning`` (``None`` for none or ``off``)."""
    thinking = session.context().thinking_level
    return thinking if isinstance(thinking, str) and thinking != "off" else None


TYPICAL_SUMMARY_TOKENS = 2000


def streamed_percentage(tokens: int) -> int:
    """A progress percentage for streaming (5..90): summaries are typically ~2k tokens."""
    return 5 + min(85, tokens * 85 // TYPICAL_SUMMARY_TOKENS)


def check_descends(session: Session, leaf_before: str | None) -> None:
    """:class:`Conflict` unless the leaf is ``leaf_before`` or continues it without a compaction."""
    if session.leaf_id == leaf_before:
        return
    for entry in session.tree.iter_up(session.leaf_id):
        if entry.id == leaf_before:
            return
        if entry.type == "compaction":
            raise Conflict("another compaction was written while the summary was being made")
    raise Conflict("the session moved to another branch while the summary was being made")


def pending_tokens(session: Session, data: JsonDict) -> int:
    """``estimatedTokensAfter`` if ``data`` were written at the leaf now (:func:`write_compaction`)."""
    full = {**data, "id": "(pending)", "parentId": session.leaf_id, "timestamp": now_iso()}
    pending = Entry.from_data(completer(session)(0, full))
    return sum(estimate_tokens(m) for m in project_path([*session.path_to(), pending]).messages)


def preview(
    prep: CompactionPreparation,
    instructions: str | None,
    reasoning: str | None = None,
    limit: OutputLimit | None = None,
) -> CompactionPreview:
    """What a compaction would do, as ``compact --dry-run`` and ``pi/beforeCompact`` show it.

    ``prompt`` is the history request :func:`compact` sends first (built by
    the same ``pipeline.requests``), ``""`` where none is sent; ``requests``
    every request in the order it is sent, as sent (before any shrinking).
    The other fields are Pi 1.6.0's preparation.
    """
    requests = compaction_requests(prep, instructions, reasoning, limit)
    lists = prep.file_lists
    return CompactionPreview(
        first_kept_entry_id=prep.first_kept_entry_id,
        is_split_turn=prep.is_split_turn,
        tokens_before=prep.tokens_before,
        messages_to_summarize=list(prep.messages_to_summarize),
        turn_prefix_messages=list(prep.turn_prefix_messages),
        previous_summary=prep.previous_summary,
        read_files=list(lists.read_files),
        modified_files=list(lists.modified_files),
        serialized=requests.serialized,
        turn_prefix_serialized=requests.turn_prefix_serialized,
        prompt=requests.history.prompt if requests.history else "",
        nothing_to_compact=prep.nothing_to_compact,
        requests=[request_view(r) for r in requests.in_order],
    )


def request_view(request: SummaryRequest) -> SummaryRequestView:
    """A request as the dry run shows it: the exact texts, the output limit and the reasoning level."""
    return SummaryRequestView(
        purpose=request.purpose,
        system_prompt=request.system_prompt,
        prompt=request.prompt,
        max_tokens=request.max_tokens,
        reasoning=request.reasoning,
    )


def compaction_entry(
    prep: CompactionPreparation, summary: str, usage: Usage | None, files: RangeFiles | None = None
) -> JsonDict:
    """The entry to append (the store assigns id, parentId and timestamp); ``details`` from ``files``."""
    files = files or range_files(prep)
    entry = CompactionEntry(
        summary=summary,
        first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        details=FileDetails(read_files=list(files.read_files), modified_files=list(files.modified_files)),
        from_hook=False,
        usage=usage,
    )
    data: JsonDict = unstructure(entry)
    return data


def _ignore(message: str, percentage: int | None) -> None:
    return None

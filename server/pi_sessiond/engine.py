"""The compaction pipeline: prepare -> summarize -> validate -> re-check -> commit one entry.

Contracts:
- Pure preparation first (``compaction.prepare``); nothing to summarize is an
  error (:class:`NothingToCompactError`) instead of Pi 0.73.1's request for a
  summary of an empty conversation (newer Pi refuses too, upstream #4811).
- The summary is validated (see ``summaries``) and must not be larger than
  what it replaces (allowing a small floor for tiny ranges); one retry, then
  a clear error.
- Before writing, the leaf is re-checked: if it moved while the summarizer ran
  the result is dropped with :class:`ConflictError`. Exactly one ``compaction``
  entry is appended, in one line, only after everything succeeded, so a
  failure or cancellation at any earlier point leaves the file untouched.
- The entry is Pi's (``summary, firstKeptEntryId, tokensBefore, details,
  fromHook``) plus ``usage`` of the summarization calls (newer Pi does too).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from pi_protocol import CompactionEntry, FileDetails, Usage, unstructure
from pi_sessiond.compaction.fileops import format_file_operations
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session
from pi_sessiond.summaries import SummaryText, SummaryValidationError, summarize_history
from pi_sessiond.summarizers.base import Summarizer

JsonDict = dict[str, Any]
MIN_SIZE_FLOOR = 1024  # tokens: a structured summary of a tiny range may exceed the range itself


class EngineError(Exception):
    """A compaction that could not be done; ``reason`` is the wire error reason."""

    reason = "internal"


class NothingToCompactError(EngineError):
    """No messages to summarize (or the newest entry already is a compaction)."""

    reason = "nothingToCompact"


class ConflictError(EngineError):
    """The leaf moved to another branch while the summary was being made."""

    reason = "conflict"


Progress = Callable[[str, int | None], None]
"""``progress(message, percentage)``: phases for a progress bar."""


@attrs.frozen(kw_only=True)
class CompactResult:
    """What ``pi/compact`` answers."""

    entry: Entry
    tokens_before: int
    tokens_after: int
    usage: Usage
    dropped_messages: int = 0


def prepare_or_refuse(session: Session, settings: CompactionSettings) -> CompactionPreparation:
    """The preparation of the leaf's path, or :class:`NothingToCompactError`."""
    path = session.path_to()
    prep = prepare_compaction(path, settings, session.context().messages)
    if prep is None:
        refusal = "Already compacted" if path and path[-1].type == "compaction" else "Nothing to compact"
        raise NothingToCompactError(f"{refusal} (session too small)" if refusal.startswith("Nothing") else refusal)
    if prep.nothing_to_compact:
        raise NothingToCompactError("Nothing to compact: every message fits in keepRecentTokens")
    return prep


async def compact(
    session: Session,
    summarizer: Summarizer,
    *,
    settings: CompactionSettings | None = None,
    custom_instructions: str | None = None,
    progress: Progress | None = None,
) -> CompactResult:
    """Compact the leaf's path and append one compaction entry."""
    settings = settings or CompactionSettings()
    report = progress or _ignore
    report("preparing", 0)
    leaf_before = session.leaf_id
    prep = prepare_or_refuse(session, settings)
    count = len(prep.messages_to_summarize) + len(prep.turn_prefix_messages)
    report(f"summarizing {count} messages", 5)
    for attempt in range(2):  # an oversized answer is asked for once more
        summary = await _summarize(session, summarizer, prep, custom_instructions, report)
        text = summary.text + _file_block(prep)
        try:
            _check_size(text, prep)
            break
        except SummaryValidationError:
            if attempt == 1:
                raise
    report("writing", 95)
    if session.leaf_id != leaf_before:
        raise ConflictError("the session moved to another entry while the summary was being made")
    entry = session.append([compaction_entry(prep, text, summary.usage)])[0]
    # Usage recorded before the compaction describes the old context: estimate the new one.
    after = sum(estimate_tokens(m) for m in session.context().messages)
    report("done", 100)
    return CompactResult(
        entry=entry,
        tokens_before=prep.tokens_before,
        tokens_after=after,
        usage=summary.usage,
        dropped_messages=summary.dropped_messages,
    )


async def _summarize(
    session: Session,
    summarizer: Summarizer,
    prep: CompactionPreparation,
    instructions: str | None,
    report: Progress,
) -> SummaryText:
    thinking = session.context().thinking_level
    reasoning = thinking if isinstance(thinking, str) and thinking != "off" else None
    return await summarize_history(
        summarizer,
        messages=prep.messages_to_summarize,
        turn_prefix=prep.turn_prefix_messages if prep.is_split_turn else (),
        reserve_tokens=prep.settings.reserve_tokens,
        previous_summary=prep.previous_summary,
        instructions=instructions,
        reasoning=reasoning,
        progress=lambda n: report(f"{n} tokens streamed", None),
    )


def _file_block(prep: CompactionPreparation) -> str:
    lists = prep.file_lists
    return format_file_operations(lists.read_files, lists.modified_files)


def _check_size(text: str, prep: CompactionPreparation) -> None:
    replaced = sum(estimate_tokens(m) for m in (*prep.messages_to_summarize, *prep.turn_prefix_messages))
    size = estimate_tokens({"role": "compactionSummary", "summary": text})
    if size > max(replaced, MIN_SIZE_FLOOR):
        raise SummaryValidationError(
            f"the summary ({size} tokens) is larger than the {replaced} tokens it would replace"
        )


def compaction_entry(prep: CompactionPreparation, summary: str, usage: Usage | None) -> JsonDict:
    """The entry to append (the store assigns id, parentId and timestamp)."""
    lists = prep.file_lists
    entry = CompactionEntry(
        summary=summary,
        first_kept_entry_id=prep.first_kept_entry_id,
        tokens_before=prep.tokens_before,
        details=FileDetails(read_files=list(lists.read_files), modified_files=list(lists.modified_files)),
        from_hook=False,
        usage=usage,
    )
    data: JsonDict = unstructure(entry)
    return data


def _ignore(message: str, percentage: int | None) -> None:
    return None

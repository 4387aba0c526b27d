"""The library API: compaction and branch summaries without a daemon.

For IDE-side agents written in Python that would rather call functions than
run a subprocess. Everything here is also what the daemon and the command
line use.

Example::

    import asyncio
    from pathlib import Path
    from pi_sessiond.api import Session, OfflineSummarizer, compact

    session = Session.open(Path("session.jsonl"))
    result = asyncio.run(compact(session, OfflineSummarizer()))
    print(result.tokens_before, "->", result.tokens_after)

A real model: ``make_summarizer(SummarizerSettings(provider="anthropic",
model="claude-sonnet-4-5", api_key_env="ANTHROPIC_API_KEY"))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.errors import Conflict, NothingToCompact, PiError
from pi_sessiond.pipeline.compaction import CompactionDone, compact
from pi_sessiond.pipeline.navigation import BranchSummary, Navigated, generate_branch_summary, navigate_tree
from pi_sessiond.pipeline.requests import history_job, serialize_messages
from pi_sessiond.pipeline.summaries import RunOptions, SummaryText, run_job
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.errors import ContextLengthError, SummarizerError
from pi_sessiond.summarizers.factory import make_summarizer
from pi_sessiond.summarizers.offline import OfflineSummarizer

__all__ = [
    "BranchSummary",
    "CompactionDone",
    "CompactionPreparation",
    "CompactionSettings",
    "Conflict",
    "ContextLengthError",
    "Navigated",
    "NothingToCompact",
    "OfflineSummarizer",
    "PiError",
    "Session",
    "Summarizer",
    "SummarizerError",
    "SummarizerSettings",
    "SummaryText",
    "compact",
    "generate_branch_summary",
    "generate_summary",
    "generate_summary_with_usage",
    "make_summarizer",
    "navigate_tree",
    "prepare_compaction",
    "serialize_conversation",
    "serialize_messages",
]


async def generate_summary_with_usage(
    messages: Sequence[JsonDict],
    summarizer: Summarizer,
    *,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
) -> SummaryText:
    """A history summary of ``messages`` (Pi's structured format) and its usage.

    ``reserve_tokens`` is accepted and ignored, as in Pi 1.6.0's
    ``generateSummary``: the output limit is the summarizer's (``pipeline.requests``).
    """
    options = RunOptions()
    job = history_job(
        messages,
        limit=options.limit_for(summarizer),
        previous_summary=previous_summary,
        instructions=custom_instructions,
    )
    return await run_job(summarizer, job, options=options)


async def generate_summary(
    messages: Sequence[JsonDict],
    summarizer: Summarizer,
    *,
    reserve_tokens: int = 16384,
    custom_instructions: str | None = None,
    previous_summary: str | None = None,
) -> str:
    """The text of :func:`generate_summary_with_usage`."""
    result = await generate_summary_with_usage(
        messages,
        summarizer,
        reserve_tokens=reserve_tokens,
        custom_instructions=custom_instructions,
        previous_summary=previous_summary,
    )
    return result.text

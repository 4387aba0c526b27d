"""The one builder of summarizer requests: history, turn prefix and branch.

Everything a summarizer is asked is built here, from a :class:`SummaryJob`:
the system prompt, the prompt text (serialized conversation + instructions),
the output limit, the purpose, the reasoning level and the headings the
answer must have. The real run (``pipeline.summaries``) and the preview
(``compact --dry-run``, ``pi/beforeCompact``'s ``preparation``) both call
:meth:`SummaryJob.request_for`, so the preview's ``prompt`` is by
construction the text that is sent (before any shrinking on a context-length
error, which drops the oldest messages and builds again).

Rules (Pi 0.73.1):
- history: ``int(0.8 * reserveTokens)`` output tokens, the previous summary
  and custom instructions in the prompt, the session's thinking level;
- turn prefix: ``int(0.5 * reserveTokens)``, no instructions; asked only for
  a split turn whose prefix has messages; the history request is then
  skipped when nothing precedes the turn (Pi's "No prior history.");
- branch: :data:`BRANCH_MAX_TOKENS`, custom instructions added to or
  replacing the guidance, no reasoning level.
Pure: no I/O, no awaits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.prompts import (
    SUMMARIZATION_SYSTEM_PROMPT,
    build_branch_prompt,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.summarizers.base import Purpose, SummaryRequest

JsonDict = dict[str, Any]

HISTORY_SHARE = 0.8
TURN_PREFIX_SHARE = 0.5
BRANCH_MAX_TOKENS = 2048
HISTORY_HEADINGS = (
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
)
TURN_PREFIX_HEADINGS = ("## Original Request", "## Early Progress", "## Context for Suffix")
BRANCH_HEADINGS = HISTORY_HEADINGS[:-1]


def serialize_messages(messages: Sequence[JsonDict]) -> str:
    """Pi's ``serializeConversation(convertToLlm(messages))`` for session messages."""
    return serialize_conversation(convert_to_llm(messages))


@attrs.frozen(kw_only=True)
class SummaryJob:
    """One summary to ask for: of which messages, for what purpose, within which limits."""

    purpose: Purpose
    messages: tuple[JsonDict, ...]
    max_tokens: int
    reasoning: str | None = None
    previous_summary: str | None = None
    instructions: str | None = None
    replace: bool = False

    def request(self, messages: Sequence[JsonDict] | None = None) -> SummaryRequest:
        """The request for ``messages`` (default: all of the job's; fewer after shrinking)."""
        chosen = self.messages if messages is None else tuple(messages)
        return self.request_for(serialize_messages(chosen), chosen)

    def request_for(self, serialized: str, messages: Sequence[JsonDict]) -> SummaryRequest:
        """The request for ``messages`` already serialized as ``serialized``."""
        return SummaryRequest(
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=self._prompt(serialized),
            max_tokens=self.max_tokens,
            purpose=self.purpose,
            reasoning=self.reasoning,
            messages=tuple(messages),
            previous_summary=self.previous_summary,
            custom_instructions=self.instructions,
            replace_instructions=self.replace,
        )

    def _prompt(self, serialized: str) -> str:
        if self.purpose == "history":
            return build_summary_prompt(serialized, self.previous_summary, self.instructions)
        if self.purpose == "turnPrefix":
            return build_turn_prefix_prompt(serialized)
        return build_branch_prompt(serialized, self.instructions, self.replace)

    @property
    def headings(self) -> Sequence[str]:
        """The headings every line-start of a usable answer must include."""
        if self.purpose == "turnPrefix":
            return TURN_PREFIX_HEADINGS
        if self.purpose == "branch":
            # Replaced instructions ask for a format of the user's own.
            return () if self.replace and self.instructions else BRANCH_HEADINGS
        return HISTORY_HEADINGS


def history_job(
    messages: Sequence[JsonDict],
    *,
    reserve_tokens: int,
    previous_summary: str | None = None,
    instructions: str | None = None,
    reasoning: str | None = None,
) -> SummaryJob:
    """The history summary of a compaction (Pi's structured format)."""
    return SummaryJob(
        purpose="history",
        messages=tuple(messages),
        max_tokens=int(HISTORY_SHARE * reserve_tokens),
        reasoning=reasoning,
        previous_summary=previous_summary,
        instructions=instructions,
    )


def turn_prefix_job(messages: Sequence[JsonDict], *, reserve_tokens: int, reasoning: str | None = None) -> SummaryJob:
    """The summary of a split turn's prefix."""
    return SummaryJob(
        purpose="turnPrefix",
        messages=tuple(messages),
        max_tokens=int(TURN_PREFIX_SHARE * reserve_tokens),
        reasoning=reasoning,
    )


def branch_job(
    messages: Sequence[JsonDict], *, instructions: str | None = None, replace_instructions: bool = False
) -> SummaryJob:
    """A branch summary's body (the caller adds the preamble and file lists)."""
    return SummaryJob(
        purpose="branch",
        messages=tuple(messages),
        max_tokens=BRANCH_MAX_TOKENS,
        instructions=instructions,
        replace=replace_instructions,
    )


@attrs.frozen
class CompactionJobs:
    """The summaries a compaction asks for.

    ``history`` is ``None`` where no history request is sent (a split turn with
    nothing before it); ``turn_prefix`` is ``None`` unless the turn is split
    and its prefix has messages. A preparation with something to compact has
    at least one of them.
    """

    history: SummaryJob | None
    turn_prefix: SummaryJob | None


def compaction_jobs(
    prep: CompactionPreparation, instructions: str | None = None, reasoning: str | None = None
) -> CompactionJobs:
    """The jobs for ``prep`` with the output limits of its ``reserveTokens``."""
    reserve = prep.settings.reserve_tokens
    prefix = None
    if prep.is_split_turn and prep.turn_prefix_messages:
        prefix = turn_prefix_job(prep.turn_prefix_messages, reserve_tokens=reserve, reasoning=reasoning)
    history = None
    if prefix is None or prep.messages_to_summarize:
        history = history_job(
            prep.messages_to_summarize,
            reserve_tokens=reserve,
            previous_summary=prep.previous_summary,
            instructions=instructions,
            reasoning=reasoning,
        )
    return CompactionJobs(history=history, turn_prefix=prefix)


@attrs.frozen
class CompactionRequests:
    """The serialized texts and the first requests of a compaction, as a preview shows them."""

    serialized: str
    turn_prefix_serialized: str
    history: SummaryRequest | None
    turn_prefix: SummaryRequest | None


def compaction_requests(
    prep: CompactionPreparation, instructions: str | None = None, reasoning: str | None = None
) -> CompactionRequests:
    """The requests :func:`compaction_jobs` sends first, and the serialized conversations in them."""
    jobs = compaction_jobs(prep, instructions, reasoning)
    serialized = serialize_messages(prep.messages_to_summarize)
    prefix = serialize_messages(jobs.turn_prefix.messages) if jobs.turn_prefix else ""
    history = jobs.history.request_for(serialized, jobs.history.messages) if jobs.history else None
    turn = jobs.turn_prefix.request_for(prefix, jobs.turn_prefix.messages) if jobs.turn_prefix else None
    return CompactionRequests(serialized=serialized, turn_prefix_serialized=prefix, history=history, turn_prefix=turn)

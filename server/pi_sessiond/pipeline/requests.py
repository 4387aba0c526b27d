"""The one builder of summarizer requests: history, turn prefix and branch.

Everything a summarizer is asked is built here, from a :class:`SummaryJob`:
the system prompt, the prompt text (serialized conversation + instructions),
the output limit, the purpose, the reasoning level and the headings the
answer must have. The real run (``pipeline.summaries``) and the preview
(``compact --dry-run``, ``pi/beforeCompact``'s ``preparation``) both call
:meth:`SummaryJob.request_for`, so the preview's ``prompt`` is by
construction the text that is sent (before any shrinking on a context-length
error, which drops the oldest messages and builds again).

Rules (Pi 1.6.0):
- output limit of every request (:func:`output_limit`):
  ``summarizer.maxTokens``, else the summarizer model's own limit
  (``models`` / Pi's ``models.json`` / the built-in table, resolved by the
  daemon into :class:`OutputLimit`), else ``min(32000, window - input -
  1024)`` with the input estimated as ``ceil(chars / 4)`` of both texts
  (never below 1024);
  ``reserveTokens`` plays no part (it only sets the trigger);
- history: the previous summary and custom instructions in the prompt, the
  session's thinking level;
- turn prefix: custom instructions too, the thinking level; asked only for a
  split turn whose prefix has messages. The history request is then skipped
  when no messages precede the turn: the history part is the previous
  summary as it is, or Pi's "No prior history." without one;
- branch: custom instructions added to or replacing the guidance, the
  session's thinking level.
- tool results sent to a model keep their head **and** tail
  (:func:`for_request`): a result above Pi's 2,000-character cut keeps its
  first ``HEAD_SHARE`` and its end within the same budget, with a marker
  saying how much was left out between (a named deviation from Pi's
  head-only cut, ``test_fix_tool_results_keep_head_and_tail``: the error is
  usually at the end). The preview's ``serialized`` stays Pi's exact text;
  ``prompt`` and ``requests`` show what is sent.
Pure: no I/O, no awaits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.prompts import (
    NO_PRIOR_HISTORY,
    SUMMARIZATION_SYSTEM_PROMPT,
    Conversation,
    build_branch_prompt,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from pi_sessiond.compaction.serialize import (
    TOOL_RESULT_MAX_CHARS,
    conversation_parts,
    serialize_conversation,
    serialize_message,
)
from pi_sessiond.compaction.text import utf16_len, utf16_prefix
from pi_sessiond.summarizers.base import Purpose, SummaryRequest

DERIVED_MAX = 32000
WINDOW_MARGIN = 1024
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
TURN_PREFIX_HEADINGS = ("## Original Request", "## Progress So Far", "## Context Needed to Continue")
BRANCH_HEADINGS = HISTORY_HEADINGS[:-1]


HEAD_SHARE = 0.4


def serialize_messages(messages: Sequence[JsonDict]) -> str:
    """Pi's ``serializeConversation(convertToLlm(messages))`` for session messages."""
    return serialize_conversation(convert_to_llm(messages))


def serialize_for_request(messages: Sequence[JsonDict]) -> str:
    """What a summarizer is sent: :func:`serialize_messages` with long tool results cut head and tail."""
    return "\n\n".join(parts_for_request(messages))


def serialized_length(messages: Sequence[JsonDict]) -> int:
    """``len(serialize_for_request(messages))``, one message at a time (the text is never built)."""
    lengths = [len(part) for m in convert_to_llm([for_request(m) for m in messages]) for part in serialize_message(m)]
    return sum(lengths) + 2 * max(0, len(lengths) - 1)


def parts_for_request(messages: Sequence[JsonDict]) -> list[str]:
    """:func:`serialize_for_request` as the pieces it joins with blank lines."""
    return conversation_parts(convert_to_llm([for_request(m) for m in messages]))


def head_and_tail(text: str, budget: int = TOOL_RESULT_MAX_CHARS) -> str:
    """``text`` within ``budget`` UTF-16 units: its start, a marker, its end (unchanged when it fits)."""
    if utf16_len(text) <= budget:
        return text
    room = budget - 60
    while room > 0:
        head, tail = int(room * HEAD_SHARE), room - int(room * HEAD_SHARE)
        omitted = len(text) - head - tail
        cut = f"{text[:head]}\n\n[... {omitted} characters omitted ...]\n\n{text[len(text) - tail:]}"
        if utf16_len(cut) <= budget:
            return cut
        room -= max(1, utf16_len(cut) - budget)
    return utf16_prefix(text, budget)


def for_request(message: JsonDict) -> JsonDict:
    """A tool result whose text exceeds Pi's cut, with its text blocks as one head-and-tail block."""
    content = message.get("content")
    if message.get("role") != "toolResult" or not isinstance(content, list):
        return message
    texts = [b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text"]
    if not all(isinstance(t, str) for t in texts):
        return message
    joined = "".join(texts)
    if utf16_len(joined) <= TOOL_RESULT_MAX_CHARS:
        return message
    rest = [b for b in content if not (isinstance(b, dict) and b.get("type") == "text")]
    return {**message, "content": [{"type": "text", "text": head_and_tail(joined)}, *rest]}


@attrs.frozen(kw_only=True)
class OutputLimit:
    """What a request's output limit is made of: ``summarizer.maxTokens``, the model's limit, the window."""

    max_tokens: int | None = None
    model_max_output: int | None = None
    context_window: int = 128000


def output_limit(limit: OutputLimit, input_tokens: int) -> int:
    """The output limit of a request whose input is ``input_tokens`` (the rule in the module docstring)."""
    if limit.max_tokens:
        return limit.max_tokens
    if limit.model_max_output:
        return limit.model_max_output
    # An input that leaves no room does not fit at all: the provider's context-length error shrinks it.
    return max(WINDOW_MARGIN, min(DERIVED_MAX, limit.context_window - input_tokens - WINDOW_MARGIN))


def input_tokens(*texts: str) -> int:
    """Pi's estimate of what a request sends: ``ceil(chars / 4)``."""
    return math.ceil(sum(len(t) for t in texts) / 4)


@attrs.frozen(kw_only=True)
class SummaryJob:
    """One summary to ask for: of which messages, for what purpose, within which limits."""

    purpose: Purpose
    messages: tuple[JsonDict, ...]
    limit: OutputLimit = attrs.field(factory=OutputLimit)
    reasoning: str | None = None
    previous_summary: str | None = None
    instructions: str | None = None
    replace: bool = False
    # When set, the messages the fidelity gate takes the hard facts from instead of ``messages`` (never
    # sent): a branch summary's whole branch, tool results included (Pi does not send them), and the
    # abandoned request (the target user message, whose text goes back to the editor).
    facts_from: tuple[JsonDict, ...] = ()

    def request(self, messages: Sequence[JsonDict] | None = None, *, with_prompt: bool = True) -> SummaryRequest:
        """The request for ``messages`` (default: all of the job's; fewer after shrinking). Without
        ``with_prompt`` its prompt is empty and only the prompt's length is computed (it sets ``max_tokens``)."""
        chosen = self.messages if messages is None else tuple(messages)
        if not with_prompt:
            return self._request(prompt="", prompt_chars=len(self._prompt("")) + serialized_length(chosen),
                                 messages=chosen)
        return self.request_for(parts_for_request(chosen), chosen)

    def request_for(self, serialized: Conversation, messages: Sequence[JsonDict]) -> SummaryRequest:
        """The request for ``messages`` already serialized as ``serialized`` (the text or its pieces)."""
        prompt = self._prompt(serialized)
        return self._request(prompt=prompt, prompt_chars=len(prompt), messages=messages)

    def _request(self, *, prompt: str, prompt_chars: int, messages: Sequence[JsonDict]) -> SummaryRequest:
        return SummaryRequest(
            system_prompt=SUMMARIZATION_SYSTEM_PROMPT,
            prompt=prompt,
            max_tokens=output_limit(self.limit, math.ceil((len(SUMMARIZATION_SYSTEM_PROMPT) + prompt_chars) / 4)),
            purpose=self.purpose,
            reasoning=self.reasoning,
            messages=tuple(messages),
            previous_summary=self.previous_summary,
            custom_instructions=self.instructions,
            replace_instructions=self.replace,
        )

    def _prompt(self, serialized: Conversation) -> str:
        if self.purpose == "history":
            return build_summary_prompt(serialized, self.previous_summary, self.instructions)
        if self.purpose == "turnPrefix":
            return build_turn_prefix_prompt(serialized, self.instructions)
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
    limit: OutputLimit | None = None,
    previous_summary: str | None = None,
    instructions: str | None = None,
    reasoning: str | None = None,
) -> SummaryJob:
    """The history summary of a compaction (Pi's structured format)."""
    return SummaryJob(
        purpose="history",
        messages=tuple(messages),
        limit=limit or OutputLimit(),
        reasoning=reasoning,
        previous_summary=previous_summary,
        instructions=instructions,
    )


def turn_prefix_job(
    messages: Sequence[JsonDict],
    *,
    limit: OutputLimit | None = None,
    instructions: str | None = None,
    reasoning: str | None = None,
) -> SummaryJob:
    """The summary of a split turn's prefix."""
    return SummaryJob(
        purpose="turnPrefix",
        messages=tuple(messages),
        limit=limit or OutputLimit(),
        reasoning=reasoning,
        instructions=instructions,
    )


def branch_job(
    messages: Sequence[JsonDict],
    *,
    limit: OutputLimit | None = None,
    instructions: str | None = None,
    replace_instructions: bool = False,
    reasoning: str | None = None,
    facts_from: Sequence[JsonDict] = (),
) -> SummaryJob:
    """A branch summary's body (the caller adds the preamble and file lists); ``facts_from``: see
    :attr:`SummaryJob.facts_from`."""
    return SummaryJob(
        purpose="branch",
        messages=tuple(messages),
        limit=limit or OutputLimit(),
        reasoning=reasoning,
        instructions=instructions,
        replace=replace_instructions,
        facts_from=tuple(facts_from),
    )


@attrs.frozen
class CompactionJobs:
    """The summaries a compaction asks for.

    ``history`` is ``None`` where no history request is sent (a split turn with
    no messages before it): ``head`` is then the history part as it stands
    (the previous summary, or Pi's ``No prior history.``). ``turn_prefix`` is
    ``None`` unless the turn is split and its prefix has messages. A
    preparation with something to compact has at least one job.
    """

    history: SummaryJob | None
    turn_prefix: SummaryJob | None
    head: str = NO_PRIOR_HISTORY


def compaction_jobs(
    prep: CompactionPreparation,
    instructions: str | None = None,
    reasoning: str | None = None,
    limit: OutputLimit | None = None,
) -> CompactionJobs:
    """The jobs for ``prep``: history (and turn prefix), with ``limit``'s output limits."""
    prefix = None
    if prep.is_split_turn and prep.turn_prefix_messages:
        prefix = turn_prefix_job(prep.turn_prefix_messages, limit=limit, instructions=instructions, reasoning=reasoning)
    history = None
    if prefix is None or prep.messages_to_summarize:
        history = history_job(
            prep.messages_to_summarize,
            limit=limit,
            previous_summary=prep.previous_summary,
            instructions=instructions,
            reasoning=reasoning,
        )
    head = prep.previous_summary if prep.previous_summary is not None else NO_PRIOR_HISTORY
    return CompactionJobs(history=history, turn_prefix=prefix, head=head)


@attrs.frozen
class CompactionRequests:
    """The serialized texts and the first requests of a compaction, as a preview shows them."""

    serialized: str
    turn_prefix_serialized: str
    history: SummaryRequest | None
    turn_prefix: SummaryRequest | None

    @property
    def in_order(self) -> tuple[SummaryRequest, ...]:
        """The requests in the order they are sent (history, then turn prefix)."""
        return tuple(r for r in (self.history, self.turn_prefix) if r is not None)


def compaction_requests(
    prep: CompactionPreparation,
    instructions: str | None = None,
    reasoning: str | None = None,
    limit: OutputLimit | None = None,
) -> CompactionRequests:
    """The requests :func:`compaction_jobs` sends first, and Pi's serialized conversations.

    ``serialized`` / ``turn_prefix_serialized`` are Pi's exact texts; the
    requests carry :func:`serialize_for_request`'s (tool results head and tail).
    """
    jobs = compaction_jobs(prep, instructions, reasoning, limit)
    serialized = serialize_messages(prep.messages_to_summarize)
    prefix = serialize_messages(jobs.turn_prefix.messages) if jobs.turn_prefix else ""
    history = jobs.history.request() if jobs.history else None
    turn = jobs.turn_prefix.request() if jobs.turn_prefix else None
    return CompactionRequests(serialized=serialized, turn_prefix_serialized=prefix, history=history, turn_prefix=turn)

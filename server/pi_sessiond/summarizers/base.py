"""The one interface every summarizer implements.

A summarizer turns one :class:`SummaryRequest` (system prompt, one user
message holding the serialized conversation and instructions, an output cap,
an optional reasoning level) into a :class:`SummaryResult` (text, usage and
why the model stopped). A summarizer makes exactly one attempt: transient
failures are retried by the one retry layer (:mod:`.retry`, driven by
``retry.*``), which reads :attr:`SummarizerError.retryable` and
``retry_after`` from the errors a provider raises.
Cancellation is plain asyncio cancellation: a cancelled ``summarize`` closes
its HTTP stream at once and re-raises ``CancelledError``; it never returns a
partial summary. ``progress`` is called with the number of output tokens
streamed so far (an estimate when the provider does not say).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, Protocol

import attrs

from pi_protocol import Usage
from pi_protocol.base import JsonDict

Purpose = Literal["history", "turnPrefix", "branch"]
StopReason = Literal["stop", "length", "toolUse"]
"""Why the model stopped: done, at its output-token limit, or to call a tool."""
ProgressCallback = Callable[[int], None]


@attrs.frozen(kw_only=True)
class SummaryRequest:
    """One summarization call.

    ``system_prompt`` and ``prompt`` are the exact texts a model receives
    (``prompt`` is empty for a summarizer that does not read it, :func:`reads_prompt`;
    ``max_tokens`` is the same either way). The structured fields (``messages`` — Pi's AgentMessages being summarized
    —, ``previous_summary``, ``custom_instructions``, ``purpose``) are what the
    offline summarizer works from; network providers ignore them.
    """

    system_prompt: str
    prompt: str
    max_tokens: int
    purpose: Purpose = "history"
    reasoning: str | None = None
    messages: Sequence[JsonDict] = ()
    previous_summary: str | None = None
    custom_instructions: str | None = None
    replace_instructions: bool = False
    body: JsonDict | None = None
    """A whole provider request body to send as it is (a replay); network providers then ignore the rest."""


@attrs.frozen(kw_only=True)
class SummaryResult:
    """The model's answer: its text blocks joined with newlines, what it cost and why it stopped.

    A ``length`` or ``toolUse`` answer is returned, not raised: whether it may
    be used is the pipeline's decision (it never is: ``summaryIncomplete``).
    """

    text: str
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: StopReason = "stop"
    provider: str = ""
    model: str = ""


class Summarizer(Protocol):
    """Anything that can summarize: the offline summarizer or a provider."""

    @property
    def name(self) -> str:
        """``offline``, ``openai`` or ``anthropic`` (plus the model, for logs)."""
        ...

    @property
    def context_window(self) -> int:
        """The summarizer model's context window, for input budgets."""
        ...

    async def summarize(
        self, request: SummaryRequest, *, progress: ProgressCallback | None = None
    ) -> SummaryResult:
        """Produce the summary in one attempt; raises :class:`SummarizerError` on failure."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def reads_prompt(summarizer: object) -> bool:
    """Whether ``summarizer`` reads a request's prompt; one with ``reads_prompt`` false (the offline
    summarizer works from the structured fields) gets requests whose prompt was never built."""
    return bool(getattr(summarizer, "reads_prompt", True))

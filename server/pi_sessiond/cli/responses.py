"""The summarizer's raw answers, kept for ``compact --show-response``.

:class:`Recorder` makes summarizers (through the usual factory) that keep the
text of every answer, before the pipeline checks, fits and normalizes it into
the summary that is written. A split turn or a chunked summary has several.
"""

from __future__ import annotations

from pi_sessiond.summarizers.base import ProgressCallback, Summarizer, SummaryRequest, SummaryResult, reads_prompt
from pi_sessiond.summarizers.config import SummarizerSettings
from pi_sessiond.summarizers.factory import make_summarizer


class Recorder:
    """A summarizer factory whose summarizers record their answers in :attr:`answers`."""

    def __init__(self) -> None:
        self.answers: list[str] = []

    def __call__(self, settings: SummarizerSettings) -> Summarizer:
        return _Recording(make_summarizer(settings), self.answers)


class _Recording:
    def __init__(self, inner: Summarizer, answers: list[str]) -> None:
        self._inner = inner
        self._answers = answers

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def context_window(self) -> int:
        return self._inner.context_window

    @property
    def reads_prompt(self) -> bool:
        return reads_prompt(self._inner)

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        result = await self._inner.summarize(request, progress=progress)
        self._answers.append(result.text)
        return result

    async def aclose(self) -> None:
        await self._inner.aclose()

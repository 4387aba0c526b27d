"""The summarizer seam: a summarizer built from ``summarizer.*``, and how summaries are asked for.

A compaction's summaries are cache-aware (:meth:`Summarizers.replaying`) when
``summarizer.cacheReuse`` is ``auto`` and the summarizer is a network one: its
history request is planned against the session's recorded request
(``pi/recordRequest``, :class:`~pi_sessiond.service.recorded.RecordedRequests`)
and the plan is reported as a progress line.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs

from pi_protocol.settings import Settings
from pi_sessiond.pipeline.cachereuse import ReplaySource, describe
from pi_sessiond.pipeline.requests import OutputLimit
from pi_sessiond.pipeline.summaries import RunOptions
from pi_sessiond.service.models import summarizer_max_output, summarizer_price
from pi_sessiond.service.progress import Report
from pi_sessiond.service.recorded import RecordedRequests
from pi_sessiond.summarizers.base import Summarizer
from pi_sessiond.summarizers.config import SummarizerSettings, summarizer_settings

SummarizerFactory = Callable[[SummarizerSettings], Summarizer]


@attrs.frozen
class Summarizers:
    """Makes summarizers (the factory is swapped in tests and by the library API)."""

    factory: SummarizerFactory
    recorded: RecordedRequests = attrs.field(factory=RecordedRequests)
    """The agents' last provider requests (``pi/recordRequest``), for cache-aware compaction."""

    def open(self, settings: Settings) -> Summarizer:
        """A summarizer built from ``summarizer.*`` (close it with ``aclose``)."""
        return self.factory(summarizer_settings(settings.summarizer))

    def replaying(self, options: RunOptions, settings: Settings, key: str, report: Report | None) -> RunOptions:
        """``options`` for a compaction of session ``key``: cache-aware under ``summarizer.cacheReuse: "auto"``
        (see the module docstring), unchanged otherwise."""
        section = settings.summarizer
        if section.cache_reuse != "auto" or section.provider == "offline":
            return options
        source = ReplaySource(agent=self.recorded.get(key), provider=section.provider, model=section.model or "",
                              window=section.context_window, price=options.price, now=time.time())
        on_plan = (lambda plan: report(describe(plan), None)) if report is not None else None
        return attrs.evolve(options, replay=source, on_plan=on_plan)


def run_options(settings: Settings, report: Report | None = None) -> RunOptions:
    """How summaries are asked for under ``settings``; each retry is reported through ``report``."""
    section = settings.summarizer
    limit = OutputLimit(
        max_tokens=section.max_tokens,
        model_max_output=summarizer_max_output(settings),
        context_window=section.context_window,
    )
    on_retry = (lambda notice: report(notice.message, None)) if report is not None else None
    return RunOptions(limit=limit, retry=settings.retry, parallel_split_turn=section.parallel_split_turn,
                      on_retry=on_retry, price=summarizer_price(settings))

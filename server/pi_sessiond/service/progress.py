"""What every summarizer job shares: its progress bar, its failure notice and the gate's additions on the wire.

A bar's ``end`` is sent in ``finally``, whatever ends the work. A failure
notice says ``cancelled`` for a cancellation or a rejection by a hook
(``aborted``), else the error's reason and Pi's wording of the message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

from pi_protocol import Gate, GateAddition
from pi_protocol.results import CompactionFailed, Reason
from pi_sessiond.errors import PiError, Rejected
from pi_sessiond.service.interface import ProgressFactory
from pi_sessiond.summarizers.gate import Added

T = TypeVar("T")
Report = Callable[[str, int | None], None]
"""A progress report: a message and a percentage (``None`` keeps the last one)."""
FAILURE_PREFIX: dict[Reason, str] = {
    "manual": "Compaction failed",
    "threshold": "Auto-compaction failed",
    "overflow": "Context overflow recovery failed",
}


async def with_progress(
    factory: ProgressFactory, title: str, token: int | str | None, work: Callable[[Report], Awaitable[T]]
) -> T:
    """Run ``work`` with a progress bar; ``end`` is sent in ``finally``."""
    bar = await factory.begin(title, token)
    outcome = "failed"
    try:
        result = await work(bar.report)
        outcome = "done"
        return result
    except asyncio.CancelledError:
        outcome = "cancelled"
        raise
    finally:
        bar.end(outcome)


def failure(session_id: str, reason: Reason, exc: BaseException, *, message: str | None = None) -> CompactionFailed:
    """The ``pi/compactionFailed`` of an attempt that ended with ``exc`` (Pi 1.6.0's wording)."""
    aborted = isinstance(exc, asyncio.CancelledError | Rejected)
    error_reason = "cancelled" if aborted else exc.reason if isinstance(exc, PiError) else "internal"
    text = message if message is not None else f"{FAILURE_PREFIX[reason]}: {describe(exc)}"
    return CompactionFailed(session_id=session_id, reason=reason, error_message=None if aborted else text,
                            aborted=aborted, will_retry=False, error_reason=error_reason)


def gate_of(added: Iterable[Added]) -> Gate:
    """The wire form of what the fidelity gate added."""
    return Gate(added=[GateAddition(kind=a.kind, text=a.text) for a in added])


def describe(exc: BaseException) -> str:
    """The message of ``exc`` as a notice shows it."""
    return exc.message if isinstance(exc, PiError) else str(exc) or type(exc).__name__


def ignore(message: str, percentage: int | None) -> None:
    """A :data:`Report` that shows nothing (background work without a bar)."""
    return None

"""The daemon's one exception tree (typed inside, standard outside).

Every failure a client or a command-line user should see is a
:class:`PiError`. Its class names a ``reason``, a key of
``pi_protocol.errors.REASONS`` (the wire table, declared once); ``message`` is
the sentence shown to the user and ``data`` the details sent beside the
reason (never a secret). The store, the pipelines (``pipeline/``), the summarizers
and the services raise these classes (or subclasses that add fields, defined
next to the code that raises them), so nothing translates one exception into
another on the way up. Only the boundaries read them: the JSON-RPC layer
(``rpc/errors.py``) maps ``reason`` to a code, the command line prints
``message`` and exits 1.

This module imports nothing from the daemon, so every layer may import it.
``asyncio.CancelledError`` is not a :class:`PiError` and is never caught as one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class PiError(Exception):
    """A failure with a stable ``reason`` (a key of ``pi_protocol.errors.REASONS``).

    ``str(exc)`` is ``exc.message``. Subclasses set ``reason``; the base one
    is ``internal``.
    """

    reason = "internal"

    def __init__(self, message: str, *, data: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data: dict[str, Any] = dict(data or {})

    def __str__(self) -> str:
        return self.message


class InvalidParams(PiError):
    """Params that parse but make no sense (the message names the field)."""

    reason = "invalidParams"


class Rejected(PiError):
    """A hook cancelled or a reviewer rejected the request."""

    reason = "cancelled"


class UnknownSession(PiError):
    """No open session (or no session file) with that id."""

    reason = "unknownSession"


class UnknownEntry(PiError):
    """An entry id that is not in the session; ``data`` has ``entryId`` when known."""

    reason = "unknownEntry"


class Locked(PiError):
    """The session cannot be written now: another process holds its lock, or it is read-only."""

    reason = "locked"


class NothingToCompact(PiError):
    """No messages to summarize (or the newest entry already is a compaction)."""

    reason = "nothingToCompact"


class SummarizerFailed(PiError):
    """The summarizer failed after its retries."""

    reason = "summarizerFailed"


class Conflict(PiError):
    """The leaf or the file changed while a summary was being made; nothing was written."""

    reason = "conflict"


class Busy(PiError):
    """A job already runs for the session, or a global limit is reached."""

    reason = "busy"


class LiveWriter(PiError):
    """A live Pi holds the session and the operation cannot be carried out by Pi, or another program
    appended to it lately and the request adds a summary or moves the leaf. ``data`` may have
    ``holder``, ``piCommand`` (what to type in Pi) and ``lastForeignAppend`` (ISO time)."""

    reason = "liveWriter"


class NotASession(PiError):
    """The file is not a Pi session (non-empty without a header, binary, a directory); nothing is written."""

    reason = "notASession"


class TooLarge(PiError):
    """A message or entry above ``daemon.maxMessageBytes``, or a session file above ``daemon.maxSessionBytes``."""

    reason = "tooLarge"


class WriteFailed(PiError):
    """The OS refused a write; ``data`` has ``path`` and ``cause`` (the errno name); the file is as it was."""

    reason = "writeFailed"


class SummaryIncomplete(PiError):
    """The summarizer stopped at its output-token limit or called a tool; nothing was written.

    ``data`` has ``purpose`` (``history``, ``turnPrefix`` or ``branch``) and
    ``stopReason`` (``length`` or ``toolUse``).
    """

    reason = "summaryIncomplete"


class NotShrinking(PiError):
    """The summary would not make the context meaningfully smaller (above 0.9 × tokensBefore); nothing written.

    ``data`` has ``tokensBefore`` and ``tokensAfter`` (the estimate had it been written).
    """

    reason = "notShrinking"

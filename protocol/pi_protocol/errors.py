"""JSON-RPC errors, declared once: every reason with its code and meaning.

:data:`REASONS` is the one table (reason -> :class:`Reason`): the standard
JSON-RPC errors and ours (``docs/protocol.md`` "Errors" is generated from it).
The daemon raises ``pi_sessiond.errors.PiError`` subclasses, each naming a
key of this table, and answers them with ``data.reason``; only the JSON-RPC
boundary (``pi_sessiond/rpc/errors.py``) looks a code up here. Every error
carries ``data.reason``, the rpc layer's own (parse error, invalid request, a
cancelled request, a request before ``initialize``) included. ``notInitialized``
shares LSP's ``-32002`` with ``unknownEntry``; the reason tells them apart.
The ``Final`` constants name the same codes for that layer and for the
generated TypeScript ``ErrorCodes``.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final, NamedTuple

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_CANCELLED: Final = -32800

SERVER_NOT_INITIALIZED: Final = -32002

UNKNOWN_SESSION: Final = -32001
UNKNOWN_ENTRY: Final = -32002
LOCKED: Final = -32003
NOTHING_TO_COMPACT: Final = -32004
SUMMARIZER_FAILED: Final = -32005
CONFLICT: Final = -32006
BUSY: Final = -32007
TOO_LARGE: Final = -32008
LIVE_WRITER: Final = -32009
NOT_A_SESSION: Final = -32010
WRITE_FAILED: Final = -32011
NOT_SHRINKING: Final = -32012
SUMMARY_INCOMPLETE: Final = -32013
UNAUTHORIZED: Final = -32014


class Reason(NamedTuple):
    """One row of the table: the JSON-RPC ``code`` and a one-line ``description`` (when it is answered)."""

    code: int
    description: str


REASONS: Final = MappingProxyType(
    {
        "parseError": Reason(PARSE_ERROR, "the message is not valid JSON or UTF-8"),
        "invalidRequest": Reason(INVALID_REQUEST, "the message is not a JSON-RPC 2.0 request or notification"),
        "methodNotFound": Reason(METHOD_NOT_FOUND, "no method of that name"),
        "invalidParams": Reason(INVALID_PARAMS, "bad params; the message names the field and what was expected"),
        "internal": Reason(INTERNAL_ERROR, "an unexpected failure, logged by the daemon; no details reach the client"),
        "cancelled": Reason(REQUEST_CANCELLED, "the request was cancelled, or a hook or reviewer refused it"),
        "notInitialized": Reason(SERVER_NOT_INITIALIZED, "a request came before initialize (LSP's code)"),
        "unknownSession": Reason(UNKNOWN_SESSION, "no open session with that sessionId"),
        "unknownEntry": Reason(UNKNOWN_ENTRY, "an id not in the session"),
        "locked": Reason(LOCKED, "another process holds the session's write lock, or the file cannot be written"),
        "nothingToCompact": Reason(NOTHING_TO_COMPACT, "no messages to summarize"),
        "summarizerFailed": Reason(
            SUMMARIZER_FAILED, "the provider failed after retries; data has status and the provider's message"
        ),
        "conflict": Reason(CONFLICT, "the leaf moved to another branch, or the file changed, while a summary ran"),
        "busy": Reason(BUSY, "a summarizer job already runs for this session, or a global limit is reached"),
        "tooLarge": Reason(TOO_LARGE, "a message above daemon.maxMessageBytes, a session file above maxSessionBytes"),
        "liveWriter": Reason(LIVE_WRITER, "the session is held by a live Pi, or another program appended to it lately"),
        "notASession": Reason(NOT_A_SESSION, "the file is not a Pi session; nothing is written"),
        "writeFailed": Reason(WRITE_FAILED, "the OS refused a write; data has path and cause (the errno name)"),
        "notShrinking": Reason(NOT_SHRINKING, "the summary would not make the context meaningfully smaller"),
        "summaryIncomplete": Reason(SUMMARY_INCOMPLETE, "the summarizer stopped at its token limit or called a tool"),
        "unauthorized": Reason(UNAUTHORIZED, "a network connection without the daemon's secret"),
    }
)
"""Every error the daemon answers, by reason, in the order of the protocol reference."""

REASON_CODES: Final = MappingProxyType({reason: row.code for reason, row in REASONS.items()})
"""``reason -> code``, derived from :data:`REASONS`."""


def code_for(reason: str) -> int:
    """The code of ``reason``; ``-32603`` for a reason that is not in the table."""
    row = REASONS.get(reason)
    return row.code if row is not None else INTERNAL_ERROR

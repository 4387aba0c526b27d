"""JSON-RPC error codes: the standard ones and ours (PROTOCOL.md "Errors").

Each of ours carries a stable ``data.reason``.
"""

from __future__ import annotations

from typing import Final

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
REQUEST_CANCELLED: Final = -32800

UNKNOWN_SESSION: Final = -32001
UNKNOWN_ENTRY: Final = -32002
LOCKED: Final = -32003
NOTHING_TO_COMPACT: Final = -32004
SUMMARIZER_FAILED: Final = -32005
CONFLICT: Final = -32006
BUSY: Final = -32007
TOO_LARGE: Final = -32008
NOT_A_SESSION: Final = -32010

REASON_CODES: Final = {
    "unknownSession": UNKNOWN_SESSION,
    "unknownEntry": UNKNOWN_ENTRY,
    "locked": LOCKED,
    "nothingToCompact": NOTHING_TO_COMPACT,
    "summarizerFailed": SUMMARIZER_FAILED,
    "conflict": CONFLICT,
    "busy": BUSY,
    "tooLarge": TOO_LARGE,
    "notASession": NOT_A_SESSION,
}

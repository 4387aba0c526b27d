"""Why a file is not a Pi session, in words a person can act on.

Pi refuses a non-empty file whose first JSON line is not a ``session`` header;
the message keeps Pi's wording and adds what the file looks like instead:
a UTF-8 byte-order mark, binary content, entries without a header, JSON that
is no session at all, or text that is no JSON.
"""

from __future__ import annotations

from pathlib import Path

import orjson

_HEAD_BYTES = 64 * 1024
_BOM = b"\xef\xbb\xbf"


def not_a_session_message(path: Path) -> str:
    """``Session file is not a valid pi session: PATH (what it is instead)``."""
    return f"Session file is not a valid pi session: {path} ({describe(_head(path))})"


def describe(head: bytes) -> str:
    """What the first bytes of a refused file look like."""
    if head.startswith(_BOM):
        return "it starts with a UTF-8 byte-order mark; save it as UTF-8 without one"
    if b"\0" in head or not _utf8(head):
        return "binary content, not JSON lines"
    first = next((line for line in head.splitlines() if line.strip()), b"")
    try:
        value = orjson.loads(first)
    except orjson.JSONDecodeError:
        return "its first line is not JSON"
    kind = value.get("type") if isinstance(value, dict) else None
    if isinstance(kind, str) and kind != "session" and "id" in value:
        return f"no session header: its first line is a {kind!r} entry"
    return 'JSON, but not a Pi session: no {"type": "session"} header line'


def _utf8(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start >= len(head) - 3  # a character cut by the end of the sample
    return True


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(_HEAD_BYTES)
    except OSError:
        return b""

"""JSON text exactly as JavaScript reads and writes it.

Pi writes ``JSON.stringify(entry)``: compact, keys in insertion order, UTF-8,
lone surrogates escaped as ``\\udXXX``. orjson matches that for everything but
lone surrogates, which it refuses; those (rare) values take the stdlib path.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(data: bytes | str) -> Any:
    """Parse one JSON value; accepts lone surrogate escapes as JavaScript does."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        return json.loads(data)


def dumps(value: Any) -> bytes:
    """Serialize like ``JSON.stringify`` (no trailing newline)."""
    try:
        return orjson.dumps(value)
    except TypeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        escaped = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        return escaped.encode("utf-8")

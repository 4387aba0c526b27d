"""JSON text exactly as JavaScript reads and writes it.

Pi writes ``JSON.stringify(entry)``: compact, keys in insertion order, UTF-8,
lone surrogates escaped as ``\\udXXX``, numbers as ``Number.prototype.toString``
prints them. orjson matches that except for some floats (``3e-6`` where JS
writes ``0.000003``, ``1.0`` where JS writes ``1``), which are re-rendered.

Depth: orjson reads 1024 levels and writes 255. Deeper values, and lone
surrogates (which orjson refuses), take the iterative path of
:mod:`pi_sessiond.jsonio.deepjson`, which reads up to ``MAX_DEPTH`` levels
(deeper raises :class:`TooDeepError`, a ``ValueError``) and writes any depth.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import orjson

from pi_sessiond.jsonio.deepjson import MAX_DEPTH, TooDeepError, deep_dumps, deep_loads, js_number

__all__ = ["CHUNK", "MAX_DEPTH", "TooDeepError", "dumps", "dumps_chunked", "js_number", "loads"]

# Output where orjson may have printed a float unlike JavaScript (an exponent or
# a ".0"). May also match inside strings; then the exact path just runs for nothing.
_ODD_FLOAT = re.compile(rb"[:,\[]-?\d+(?:\.\d+)?e|[:,\[]-?\d+\.0[,}\]]")


def loads(data: bytes | str) -> Any:
    """Parse one JSON value; accepts lone surrogate escapes as JavaScript does.

    Raises ``ValueError`` (``UnicodeDecodeError``, ``TooDeepError`` included)
    for anything that is not one JSON value nested at most ``MAX_DEPTH`` deep.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        if isinstance(data, bytes):
            data = data.decode("utf-8")
        try:
            return json.loads(data, parse_constant=_refuse_constant)
        except RecursionError:
            return deep_loads(data)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # JSON.parse refuses NaN and Infinity too


def dumps(value: Any) -> bytes:
    """Serialize like ``JSON.stringify`` (no trailing newline), at any depth."""
    try:
        out = orjson.dumps(value)
    except TypeError:  # too deep, a lone surrogate, or not JSON at all
        return deep_dumps(value).encode("utf-8")
    if _ODD_FLOAT.search(out):
        out = orjson.dumps(_js_floats(value))
    return out


def _js_floats(value: Any) -> Any:
    # Only called on values orjson could write, so at most 255 levels deep.
    if isinstance(value, float):
        return orjson.Fragment(js_number(value))
    if isinstance(value, dict):
        return {k: _js_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_floats(v) for v in value]
    return value


CHUNK = 256
"""Items encoded per ``orjson.dumps`` call by :func:`dumps_chunked`: orjson holds the GIL for a whole call."""


def dumps_chunked(items: Sequence[Any]) -> bytes:
    """``orjson.dumps(list(items), option=OPT_NON_STR_KEYS)``, :data:`CHUNK` items per call, so another
    thread gets the GIL in between; ``TypeError`` for a value orjson cannot write (too deep, not JSON)."""
    parts = [orjson.dumps(list(items[i:i + CHUNK]), option=orjson.OPT_NON_STR_KEYS)[1:-1]
             for i in range(0, len(items), CHUNK)]
    return b"[" + b",".join(p for p in parts if p) + b"]"

"""JSON text exactly as JavaScript reads and writes it.

Pi writes ``JSON.stringify(entry)``: compact, keys in insertion order, UTF-8,
lone surrogates escaped as ``\\udXXX``, numbers as ``Number.prototype.toString``
prints them. orjson matches that except for some floats (``3e-6`` where JS
writes ``0.000003``, ``1.0`` where JS writes ``1``), which are re-rendered, and
lone surrogates, which orjson refuses and the stdlib path handles.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import orjson

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Output where orjson may have printed a float unlike JavaScript (an exponent or
# a ".0"). May also match inside strings; then the exact path just runs for nothing.
_ODD_FLOAT = re.compile(rb"[:,\[]-?\d+(?:\.\d+)?e|[:,\[]-?\d+\.0[,}\]]")


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
        out = orjson.dumps(value)
    except TypeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
        escaped = _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
        return escaped.encode("utf-8")
    if _ODD_FLOAT.search(out):
        out = orjson.dumps(_js_floats(value))
    return out


def js_number(value: float) -> str:
    """A finite float exactly as JavaScript's ``Number.prototype.toString``."""
    if value == 0:
        return "0"
    sign, digits, exp = Decimal(repr(value)).normalize().as_tuple()
    text, k = "".join(map(str, digits)), len(digits)
    n = k + int(exp)
    if k <= n <= 21:
        text += "0" * (n - k)
    elif 0 < n <= 21:
        text = f"{text[:n]}.{text[n:]}"
    elif -6 < n <= 0:
        text = "0." + "0" * -n + text
    else:
        text = f"{text[0]}{'.' + text[1:] if k > 1 else ''}e{'+' if n > 0 else '-'}{abs(n - 1)}"
    return ("-" if sign else "") + text


def _js_floats(value: Any) -> Any:
    if isinstance(value, float):
        return orjson.Fragment(js_number(value))
    if isinstance(value, dict):
        return {k: _js_floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_js_floats(v) for v in value]
    return value

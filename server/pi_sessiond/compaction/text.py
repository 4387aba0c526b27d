"""JavaScript string semantics that compaction depends on.

Pi measures, cuts and sorts strings the way JavaScript does, so every helper
here works in UTF-16 code units, never in Python code points.

Invariants:

* ``utf16_len(s)`` equals JavaScript's ``s.length`` for every Python ``str``
  (an astral character counts 2, a lone surrogate counts 1).
* ``js_stringify(v)`` equals ``JSON.stringify(v)`` for every value a JSON
  parser can produce: key order kept (array-index keys first, as JavaScript
  objects order them), integral numbers without ``.0``, JavaScript's number
  formatting, lone surrogates escaped, non-ASCII left as is.
* Sorting with ``js_sort_key`` equals JavaScript's default ``Array.sort``
  order for strings (UTF-16 code-unit order).
* ``utf16_prefix`` never splits a surrogate pair: when the cut would fall
  between the two halves it keeps one unit fewer.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from decimal import Decimal
from typing import Any

_MAX_SAFE_INT = 2**53
_ARRAY_INDEX_LIMIT = 2**32 - 1
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
}
# A surrogate pair stays raw; any other surrogate, a quote, a backslash or a
# control character is escaped.
_NEEDS_ESCAPE = re.compile('[\ud800-\udbff][\udc00-\udfff]|["\\\\\x00-\x1f\ud800-\udfff]')
_INDEX_KEY = re.compile(r"0|[1-9][0-9]*")
_DONE: Any = object()


class _Undefined:
    """JavaScript ``undefined``: what a missing property reads as."""

    def __repr__(self) -> str:
        return "UNDEFINED"


UNDEFINED: Any = _Undefined()


def utf16_len(text: str) -> int:
    """JavaScript ``text.length``: the number of UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_sort_key(text: str) -> bytes:
    """A key that sorts strings in JavaScript's default (UTF-16 code-unit) order."""
    return text.encode("utf-16-be", "surrogatepass")


def js_sorted(items: Iterable[str]) -> list[str]:
    """``[...items].sort()`` for strings."""
    return sorted(items, key=js_sort_key)


def utf16_prefix(text: str, units: int) -> str:
    """The first ``units`` UTF-16 code units of ``text``, never half a pair.

    If the cut would separate a high surrogate from its low surrogate the
    high one is dropped too, so the result may be one unit shorter.
    """
    if units <= 0:
        return ""
    if text.isascii():
        return text[:units]
    raw = text.encode("utf-16-le", "surrogatepass")
    cut = units * 2
    if cut < len(raw) and _is_high(raw, cut - 2) and _is_low(raw, cut):
        cut -= 2
    return raw[:cut].decode("utf-16-le", "surrogatepass")


def _is_high(raw: bytes, offset: int) -> bool:
    return 0xD8 <= raw[offset + 1] <= 0xDB


def _is_low(raw: bytes, offset: int) -> bool:
    return 0xDC <= raw[offset + 1] <= 0xDF


def utf16_units(text: str) -> list[str]:
    """``text`` split into UTF-16 code units (each a one-unit ``str``)."""
    raw = text.encode("utf-16-le", "surrogatepass")
    return [raw[i : i + 2].decode("utf-16-le", "surrogatepass") for i in range(0, len(raw), 2)]


def js_number(value: int | float) -> str:
    """JavaScript's ``String(n)`` for a number parsed from JSON."""
    if isinstance(value, int) and -_MAX_SAFE_INT <= value <= _MAX_SAFE_INT:
        return str(value)
    try:
        number = float(value)
    except OverflowError:
        number = math.inf if value > 0 else -math.inf
    if math.isnan(number):
        return "NaN"
    if math.isinf(number):
        return "Infinity" if number > 0 else "-Infinity"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    return sign + _format_positive(abs(number))


def _format_positive(number: float) -> str:
    """ECMAScript Number::toString for a finite positive double."""
    _, digit_tuple, exponent = Decimal(repr(number)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    # value = 0.<digits> * 10**point
    point = len("".join(map(str, digit_tuple))) + exponent
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return "0." + "0" * (-point) + digits
    shown = point - 1
    mantissa = digits if count == 1 else digits[0] + "." + digits[1:]
    return f"{mantissa}e{'+' if shown >= 0 else '-'}{abs(shown)}"


def js_quote(text: str) -> str:
    """``JSON.stringify`` of a string."""
    return '"' + _NEEDS_ESCAPE.sub(_escape, text) + '"'


def _escape(match: re.Match[str]) -> str:
    found = match.group(0)
    if len(found) == 2:
        return found
    if found in _ESCAPES:
        return _ESCAPES[found]
    return f"\\u{ord(found):04x}"


def js_object_items(obj: dict[str, Any]) -> list[tuple[str, Any]]:
    """``Object.entries(obj)``: array-index keys ascending first, then insertion order."""
    index_keys = [k for k in obj if _is_array_index(k)]
    if not index_keys:
        return list(obj.items())
    index_keys.sort(key=int)
    rest = [k for k in obj if not _is_array_index(k)]
    return [(k, obj[k]) for k in index_keys + rest]


def _is_array_index(key: str) -> bool:
    return _INDEX_KEY.fullmatch(key) is not None and int(key) < _ARRAY_INDEX_LIMIT


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)`` (compact) for JSON-shaped Python data, at any depth (no recursion)."""
    parts: list[str] = []
    stack: list[tuple[Iterator[Any], bool, list[int]]] = []  # items, is an object, items written
    item = value
    while True:
        if isinstance(item, list | tuple):
            parts.append("[")
            stack.append((iter(item), False, [0]))
        elif isinstance(item, dict):
            parts.append("{")
            stack.append((iter(js_object_items(item)), True, [0]))
        else:
            parts.append(_js_scalar(item))
        while stack:
            items, is_object, count = stack[-1]
            nxt = next(items, _DONE)
            if nxt is _DONE:
                parts.append("}" if is_object else "]")
                stack.pop()
                continue
            if count[0]:
                parts.append(",")
            count[0] += 1
            if is_object:
                parts.append(js_quote(str(nxt[0])) + ":")
                item = nxt[1]
            else:
                item = nxt
            break
        else:
            return "".join(parts)


def _js_scalar(value: Any) -> str:
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, str):
        return js_quote(value)
    if isinstance(value, int | float):
        if isinstance(value, float) and not math.isfinite(value):
            return "null"
        return js_number(value)
    return "null"


def js_template(value: Any) -> str:
    """How a value prints inside a JavaScript template literal (``${value}``)."""
    if isinstance(value, str):
        return value
    if value is UNDEFINED:
        return "undefined"
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value)
    if isinstance(value, list):
        return ",".join("" if v is None or v is UNDEFINED else js_template(v) for v in value)
    return "[object Object]"


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness (objects and arrays are truthy even when empty)."""
    if value is None or value is False or value is UNDEFINED:
        return False
    if isinstance(value, str):
        return value != ""
    if isinstance(value, int | float):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    return True

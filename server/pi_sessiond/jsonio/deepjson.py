"""JSON of any nesting depth, without recursion.

orjson stops at 1024 levels (reading) and 255 (writing) and the stdlib's C
scanner at the interpreter's recursion limit; JavaScript's ``JSON.parse``
reads far deeper lines, so Pi opens files we could not. These two functions
are the slow, iterative fallback that :mod:`pi_sessiond.jsonio.jsontext` uses
when the fast paths refuse a value for its depth (or, for writing, for a lone
surrogate).

Contracts:
- :func:`deep_loads` parses RFC 8259 JSON exactly as ``json.loads`` does
  (lone surrogate escapes accepted, later duplicate keys win; ``NaN`` and
  ``Infinity`` refused, as JavaScript refuses them); a value nested deeper
  than ``max_depth`` raises :class:`TooDeepError` (a ``ValueError``).
- :func:`deep_dumps` writes what ``JSON.stringify`` writes for JSON-shaped
  data: compact, keys in insertion order, lone surrogates escaped as
  ``\\udXXX``, non-finite floats as ``null``; ``default`` turns any other
  object into JSON-shaped data (as orjson's ``default``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from json.decoder import scanstring  # type: ignore[attr-defined]
from json.scanner import NUMBER_RE
from typing import Any

MAX_DEPTH = 100_000
"""Lines nested deeper than this are skipped with a warning (see reader.py)."""

_WS = re.compile(r"[ \t\n\r]*")
_LITERALS = {"t": ("true", True), "f": ("false", False), "n": ("null", None)}
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_END: Any = object()


class TooDeepError(ValueError):
    """A JSON value nested deeper than the limit."""


def deep_loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse one JSON value of any depth up to ``max_depth``; ``ValueError`` when invalid."""
    try:
        return _parse(text, max_depth)
    except (IndexError, KeyError) as exc:
        raise ValueError("invalid JSON") from exc


def _parse(s: str, max_depth: int) -> Any:
    stack: list[Any] = []
    keys: list[str] = []
    pos = _WS.match(s, 0).end()  # type: ignore[union-attr]
    while True:
        if len(stack) >= max_depth and s[pos] in "{[":
            raise TooDeepError(f"nested deeper than {max_depth} levels")
        value, pos, opened = _value(s, pos)
        if opened is not None:
            stack.append(opened)
            if isinstance(opened, dict):
                key, pos = _key(s, pos)
                keys.append(key)
            continue
        while True:
            if not stack:
                if _WS.match(s, pos).end() != len(s):  # type: ignore[union-attr]
                    raise ValueError("extra data after the JSON value")
                return value
            top = stack[-1]
            if isinstance(top, dict):
                top[keys[-1]] = value
            else:
                top.append(value)
            pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
            ch = s[pos]
            if ch == ",":
                pos = _WS.match(s, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(top, dict):
                    keys[-1], pos = _key(s, pos)
                break
            if ch != ("}" if isinstance(top, dict) else "]"):
                raise ValueError(f"unexpected {ch!r} at {pos}")
            value = stack.pop()
            if isinstance(value, dict):
                keys.pop()
            pos += 1


def _value(s: str, pos: int) -> tuple[Any, int, dict[str, Any] | list[Any] | None]:
    """A scalar (value, end, None), an empty container, or an opened one (None, pos of its first item, it)."""
    ch = s[pos]
    if ch == "{" or ch == "[":
        container: dict[str, Any] | list[Any] = {} if ch == "{" else []
        pos = _WS.match(s, pos + 1).end()  # type: ignore[union-attr]
        if s[pos] == ("}" if ch == "{" else "]"):
            return container, pos + 1, None
        return None, pos, container
    if ch == '"':
        text, end = scanstring(s, pos + 1, True)
        return text, end, None
    if ch in _LITERALS:
        word, literal = _LITERALS[ch]
        if s.startswith(word, pos):
            return literal, pos + len(word), None
        raise ValueError(f"invalid literal at {pos}")
    m = NUMBER_RE.match(s, pos)
    if m is None:
        raise ValueError(f"unexpected {ch!r} at {pos}")
    integer, frac, exp = m.groups()
    number: int | float = float(integer + (frac or "") + (exp or "")) if frac or exp else int(integer)
    return number, m.end(), None


def _key(s: str, pos: int) -> tuple[str, int]:
    if s[pos] != '"':
        raise ValueError(f"expected a key at {pos}")
    key, pos = scanstring(s, pos + 1, True)
    pos = _WS.match(s, pos).end()  # type: ignore[union-attr]
    if s[pos] != ":":
        raise ValueError(f"expected ':' at {pos}")
    return key, _WS.match(s, pos + 1).end()  # type: ignore[union-attr]


def deep_dumps(value: Any, default: Callable[[Any], Any] | None = None) -> str:
    """``JSON.stringify(value)`` of any depth (see the module docstring)."""
    parts: list[str] = []
    # One frame per open container: its items, whether it is an object, items written so far.
    stack: list[tuple[Iterator[Any], bool, list[int]]] = []
    item: Any = value
    while True:
        _open_or_write(item, default, parts, stack)
        while stack:
            items, is_dict, count = stack[-1]
            nxt = next(items, _END)
            if nxt is _END:
                parts.append("}" if is_dict else "]")
                stack.pop()
                continue
            if count[0]:
                parts.append(",")
            count[0] += 1
            if is_dict:
                key, item = nxt
                parts.append(_quote(key if isinstance(key, str) else str(key)) + ":")
            else:
                item = nxt
            break
        else:
            return "".join(parts)


def _open_or_write(
    item: Any,
    default: Callable[[Any], Any] | None,
    parts: list[str],
    stack: list[tuple[Iterator[Any], bool, list[int]]],
) -> None:
    if default is not None and not isinstance(item, str | int | float | bool | dict | list | tuple | type(None)):
        item = default(item)
    if isinstance(item, dict):
        parts.append("{")
        stack.append((iter(item.items()), True, [0]))
    elif isinstance(item, list | tuple):
        parts.append("[")
        stack.append((iter(item), False, [0]))
    else:
        parts.append(_scalar(item))


def _scalar(value: Any) -> str:
    if value is None or value is True or value is False:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, str):
        return _quote(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return js_number(value) if math.isfinite(value) else "null"
    raise TypeError(f"Type is not JSON serializable: {type(value).__name__}")


def _quote(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)


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

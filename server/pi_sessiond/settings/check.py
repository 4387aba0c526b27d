"""Checking one layer of settings against the tree of :mod:`pi_protocol.settings`.

Contract of :func:`check_layer`: it returns the layer with only the known keys
whose values fit (a section is an object checked key by key; a leaf must fit
its field's type — through the one converter — and bounds), plus one
``(dotted key, message)`` per known key whose value does not. Unknown keys
are dropped silently: Pi's own keys share these files. Messages say what was
expected, the JSON kind received and the value itself (at most 60 characters),
except under a key that may hold a secret (any header, a name ending in ``key`` or
``token``, one with ``secret``, ``password`` or ``auth``), whose value is never shown.
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Mapping
from typing import Any, get_args, get_origin

import attrs

from pi_protocol import StructureError, structure
from pi_protocol.base import JsonDict, camel
from pi_protocol.settings import EXCLUSIVE_MINIMUM, MINIMUM, Settings

Problem = tuple[str, str]


_FIELDS: dict[type[Any], dict[str, tuple[attrs.Attribute[Any], Any]]] = {}


def fields_of(cls: type[Any]) -> dict[str, tuple[attrs.Attribute[Any], Any]]:
    """Wire name -> (attrs field, resolved type hint) of one section class (cached)."""
    cached = _FIELDS.get(cls)
    if cached is None:
        hints = typing.get_type_hints(cls)
        cached = _FIELDS[cls] = {f.metadata.get("wire", camel(f.name)): (f, hints[f.name]) for f in attrs.fields(cls)}
    return cached


def check_layer(data: Mapping[str, Any], cls: type[Any] = Settings, prefix: str = "") -> tuple[JsonDict, list[Problem]]:
    """The known, valid part of ``data`` and the problems of the rest (see the module docstring)."""
    clean: JsonDict = {}
    problems: list[Problem] = []
    known = fields_of(cls)
    for key, value in data.items():
        spec = known.get(key)
        if spec is None:
            continue
        field, hint = spec
        dotted = f"{prefix}{key}"
        if attrs.has(hint):
            if not isinstance(value, dict):
                problems.append((dotted, _message(StructureError([], "an object", value))))
                continue
            sub, more = check_layer(value, hint, dotted + ".")
            problems += more
            if sub:  # an empty section sets nothing (and claims no source)
                clean[key] = sub
            continue
        value_type = section_map(hint)
        if value_type is not None:
            entries, more = _check_map(value, value_type, dotted)
            problems += more
            if entries is not None:
                clean[key] = entries
            continue
        problem = leaf_problem(value, field, hint)
        if problem is None:
            clean[key] = value
        else:
            problems.append((dotted + problem[0], shown(problem[1], value, dotted + problem[0])))
    return clean, problems


def section_map(hint: Any) -> type[Any] | None:
    """The section class ``C`` of a ``dict[str, C]`` field (a map whose values are sections), else ``None``."""
    if get_origin(hint) is dict:
        value_type = get_args(hint)[1]
        if attrs.has(value_type):
            return typing.cast(type[Any], value_type)
    return None


def _check_map(value: Any, value_type: type[Any], dotted: str) -> tuple[JsonDict | None, list[Problem]]:
    """A map of sections checked entry by entry and field by field (``None``: not an object at all)."""
    if not isinstance(value, dict):
        return None, [(dotted, _message(StructureError([], "an object", value)))]
    entries: JsonDict = {}
    problems: list[Problem] = []
    for name, item in value.items():
        if not isinstance(item, dict):
            problems.append((f"{dotted}.{name}", _message(StructureError([], "an object", item))))
            continue
        entry, more = check_layer(item, value_type, f"{dotted}.{name}.")
        problems += more
        if entry or not item:  # an entry emptied by its problems sets nothing (and claims no source)
            entries[name] = entry
    return (entries if entries or not value else None), problems


def leaf_problem(value: Any, field: attrs.Attribute[Any], hint: Any) -> Problem | None:
    """``None`` when ``value`` fits; else (a key suffix such as ``.name`` of a map entry, message)."""
    try:
        structure(value, hint)
        if get_origin(hint) is dict and get_args(hint)[1] is not Any:
            for name, item in value.items():
                try:
                    structure(item, get_args(hint)[1])
                except StructureError as exc:
                    return f".{name}", _message(exc)
    except StructureError as exc:
        return "", _message(exc)
    return _bounds_problem(value, field.metadata)


def _bounds_problem(value: Any, metadata: Mapping[str, Any]) -> Problem | None:
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    minimum, above = metadata.get(MINIMUM), metadata.get(EXCLUSIVE_MINIMUM)
    if minimum is not None and value < minimum:
        return "", f"expected a number >= {minimum}, got {value}"
    if above is not None and value <= above:
        return "", f"expected a number > {above}, got {value}"
    return None


_SECRET_KEY = re.compile(r"(^|\.)headers\.|key$|token$|secret|password|^auth|\.auth", re.IGNORECASE)
_SHOWN_CHARS = 60


def shown(message: str, value: Any, dotted: str) -> str:
    """``message`` with the offending value after it, unless ``dotted`` may hold a secret."""
    if _SECRET_KEY.search(dotted):
        return message
    if not message.endswith(("got string", "got number", "got boolean", "got null")):
        return message
    text = json.dumps(value, ensure_ascii=False)
    return f"{message} {text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 1] + '…'}"


def _message(exc: StructureError) -> str:
    exc.path = []
    return exc.describe().removeprefix("params: ")



def first_problem(data: Any) -> str | None:
    """``settings.<key>: <message>`` for the first invalid known key of ``data`` (``None``: all fit).

    For layers that must be refused whole (``pi/updateSettings``, ``initializationOptions``)
    instead of falling back key by key.
    """
    if not isinstance(data, Mapping):
        return "settings: expected an object"
    _, problems = check_layer(data)
    return f"settings.{problems[0][0]}: {problems[0][1]}" if problems else None

"""The one converter: attrs classes <-> camelCase JSON, on the wire and on disk.

Structuring is strict about types (a wrong type or a missing required field
raises :class:`StructureError` naming the field path and what was expected) and
lenient about unknown data: unknown keys go to ``extra``, and members of a
discriminated union (content blocks by ``type``, messages by ``role``, entries
by ``type``) with an unknown discriminator stay plain dicts. Unstructuring
writes known fields in declaration order, omits ``None`` unless the field is
``keep_null``, then appends ``extra`` — so nothing a newer Pi wrote is lost.
Fields typed ``list[Any]``, ``dict[str, Any]``, a :class:`~pi_protocol.base.Raw`
alias (``RawEntry``, ``RawMessage``, ``RawHeader``) or a list of one hold raw
JSON — Pi's messages and entries, settings — and are passed through without a
copy: never put attrs objects in them (a plain ``Any`` field is still walked).
"""

from __future__ import annotations

import functools
import json
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar, get_args, get_origin

import attrs
import cattrs

from pi_protocol.base import Raw, camel

T = TypeVar("T")

@functools.cache
def _discriminated() -> tuple[tuple[str, dict[str, type[Any]]], ...]:
    """The tagged unions: (tag key, tag -> class). Imported by the first union of classes structured
    (a class of one of them exists only once its module is imported, so none is missed before)."""
    from pi_protocol.content import CONTENT_TYPES
    from pi_protocol.entries import ENTRY_TYPES
    from pi_protocol.messages import MESSAGE_ROLES

    return (("type", CONTENT_TYPES), ("role", MESSAGE_ROLES), ("type", ENTRY_TYPES))


class StructureError(ValueError):
    """Input that does not fit a wire type; ``path`` names the offending field."""

    def __init__(self, path: list[str | int], expected: str, got: object) -> None:
        self.path = path
        self.expected = expected
        self.got = got
        super().__init__(self.describe())

    def describe(self) -> str:
        """``where: expected …, got KIND`` (a short string that is not one of the named values is shown)."""
        where = ".".join(str(p) for p in self.path) or "params"
        got = _json_kind(self.got)
        if isinstance(self.got, str) and "'" in self.expected and len(self.got) <= 40:
            got = f"{got} {json.dumps(self.got)}"
        return f"{where}: expected {self.expected}, got {got}"

    def missing(self) -> StructureError:
        """Mark the error as a required field that is absent."""
        self.expected = f"{self.expected} (required field missing)"
        self.args = (self.describe(),)
        return self

    def at(self, key: str | int) -> StructureError:
        self.path.insert(0, key)
        self.args = (self.describe(),)
        return self


def _json_kind(value: object) -> str:
    kinds = {type(None): "null", bool: "boolean", str: "string", dict: "object", list: "array"}
    if type(value) in kinds:
        return kinds[type(value)]
    if isinstance(value, int | float):
        return "number"
    return type(value).__name__


@attrs.frozen
class _FieldSpec:
    name: str
    wire: str
    hint: Any
    required: bool
    keep_null: bool
    raw: bool  # raw JSON (list[Any], dict[str, Any]): written as is


def _is_raw(hint: Any) -> bool:
    """Raw JSON: ``list[Any]``, ``dict[str, Any]``, a :class:`Raw` alias or a list of one (hint with extras)."""
    origin, args = get_origin(hint), get_args(hint)
    if origin is Annotated:
        return any(isinstance(m, Raw) for m in hint.__metadata__) or _is_raw(args[0])
    if origin is list:
        return args[0] is Any or (get_origin(args[0]) is Annotated and _is_raw(args[0]))
    if origin is dict:
        return args[1] is Any
    return False


_SPECS: dict[type[Any], tuple[tuple[_FieldSpec, ...], bool]] = {}


def _specs(cls: type[Any]) -> tuple[tuple[_FieldSpec, ...], bool]:
    cached = _SPECS.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    marked = typing.get_type_hints(cls, include_extras=True)
    specs: list[_FieldSpec] = []
    has_extra = False
    for f in attrs.fields(cls):
        if f.metadata.get("extra"):
            has_extra = True
            continue
        specs.append(
            _FieldSpec(
                name=f.name,
                wire=f.metadata.get("wire", camel(f.name)),
                hint=hints[f.name],
                required=f.default is attrs.NOTHING,
                keep_null=bool(f.metadata.get("keep_null")),
                raw=_is_raw(marked[f.name]),
            )
        )
    _SPECS[cls] = (tuple(specs), has_extra)
    return _SPECS[cls]


@functools.cache
def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (typing.Union, types.UnionType)


@functools.cache
def _allows_none(hint: Any) -> bool:
    return hint is Any or (_is_union(hint) and type(None) in get_args(hint))


def _expected(hint: Any) -> str:
    if hint is type(None):
        return "null"
    if hint is str:
        return "string"
    if hint is bool:
        return "boolean"
    if hint in (int, float):
        return "number"
    if get_origin(hint) is Literal:
        return " or ".join(repr(a) for a in get_args(hint))
    if get_origin(hint) is list:
        return "array"
    if get_origin(hint) is dict or attrs.has(hint):
        return "object"
    if _is_union(hint):
        return " or ".join(dict.fromkeys(_expected(a) for a in get_args(hint)))
    return str(hint)


_SCALARS = frozenset({str, int, float, bool})
_PRIMITIVES = frozenset({str, int, float, bool, type(None)})


def _structure(value: Any, hint: Any) -> Any:
    if hint is Any:
        return value
    if hint in _SCALARS:
        return _structure_scalar(value, hint)
    if _is_union(hint):
        return _structure_union(value, hint)
    origin = get_origin(hint)
    if origin is Literal:
        if value not in get_args(hint):
            raise StructureError([], _expected(hint), value)
        return value
    if origin is list:
        if not isinstance(value, list):
            raise StructureError([], "array", value)
        (item,) = get_args(hint)
        return [_item(_structure, v, item, i) for i, v in enumerate(value)]
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise StructureError([], "object", value)
        args = get_args(hint)
        if args and attrs.has(args[1]):  # a map of attrs values (e.g. compaction.modelOverrides)
            return {k: _item(_structure, v, args[1], k) for k, v in value.items()}
        return value
    if attrs.has(hint):
        return _structure_attrs(value, hint)
    return _structure_scalar(value, hint)


def _item(fn: Callable[[Any, Any], Any], value: Any, hint: Any, key: str | int) -> Any:
    try:
        return fn(value, hint)
    except StructureError as exc:
        raise exc.at(key) from None


def _structure_scalar(value: Any, hint: Any) -> Any:
    if hint is bool:
        ok = isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok and isinstance(value, float) and value.is_integer():
            return int(value)
    elif hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif hint is str:
        ok = isinstance(value, str)
    elif hint is type(None):
        ok = value is None
    else:
        ok = isinstance(value, hint)
    if not ok:
        raise StructureError([], _expected(hint), value)
    return value


@functools.cache
def _union_parts(hint: Any) -> tuple[tuple[Any, ...], bool, tuple[Any, ...], Any]:
    """(members, allows None, attrs classes, the single scalar member or None)."""
    members = get_args(hint)
    classes = tuple(m for m in members if attrs.has(m))
    others = [m for m in members if m is not type(None) and not attrs.has(m)]
    scalar = others[0] if len(others) == 1 and others[0] in _SCALARS and not classes else None
    return members, type(None) in members, classes, scalar


def _structure_union(value: Any, hint: Any) -> Any:
    members, allows_none, classes_t, scalar = _union_parts(hint)
    if value is None:
        if allows_none:
            return None
        raise StructureError([], _expected(hint), value)
    if scalar is not None:  # the common ``str | None`` shape
        try:
            return _structure_scalar(value, scalar)
        except StructureError:
            raise StructureError([], _expected(hint), value) from None
    classes = list(classes_t)
    if classes and isinstance(value, dict):
        for key, table in _discriminated():
            if classes[0] in table.values():
                tag = value.get(key)
                cls = table.get(tag) if isinstance(tag, str) else None
                if cls is not None and cls in classes:
                    return _structure_attrs(value, cls)
                if any(get_origin(m) is dict for m in members):
                    return value
                raise StructureError([key], " or ".join(map(repr, table)), value.get(key))
        if len(classes) == 1:
            return _structure_attrs(value, classes[0])
    for member in members:
        if member is type(None) or attrs.has(member):
            continue
        try:
            return _structure(value, member)
        except StructureError:
            continue
    raise StructureError([], _expected(hint), value)


def _structure_attrs(value: Any, cls: type[T]) -> T:
    if not isinstance(value, dict):
        raise StructureError([], "object", value)
    specs, has_extra = _specs(cls)
    kwargs: dict[str, Any] = {}
    known: set[str] = set()
    extra: dict[str, Any] = {}
    for spec in specs:
        known.add(spec.wire)
        if spec.wire not in value:
            if spec.required:
                raise StructureError([spec.wire], _expected(spec.hint), None).missing()
            continue
        raw = value[spec.wire]
        if raw is None and not spec.keep_null and _allows_none(spec.hint):
            extra[spec.wire] = None
            continue
        kwargs[spec.name] = _item(_structure, raw, spec.hint, spec.wire)
    if has_extra:
        extra.update((k, v) for k, v in value.items() if k not in known)
        kwargs["extra"] = extra
    return cls(**kwargs)


def _unstructure(value: Any) -> Any:
    if type(value) in _PRIMITIVES:
        return value
    if attrs.has(type(value)):
        return _unstructure_attrs(value)
    if isinstance(value, list):
        return [_unstructure(v) for v in value]
    if isinstance(value, dict):
        return {k: _unstructure(v) for k, v in value.items()}
    return value


def _unstructure_attrs(value: Any) -> dict[str, Any]:
    specs, has_extra = _specs(type(value))
    out: dict[str, Any] = {}
    for spec in specs:
        v = getattr(value, spec.name)
        if v is None and not spec.keep_null:
            continue
        out[spec.wire] = v if spec.raw else _unstructure(v)
    if has_extra:
        for k, v in value.extra.items():
            out.setdefault(k, _unstructure(v))
    return out


def make_converter() -> cattrs.Converter:
    """Build the converter; every attrs class in ``pi_protocol`` goes through it."""
    conv = cattrs.Converter()
    conv.register_structure_hook_func(attrs.has, _structure_attrs)
    conv.register_unstructure_hook_func(attrs.has, _unstructure_attrs)
    return conv


converter = make_converter()


def structure(value: Any, cls: type[T]) -> T:
    """Structure JSON data into ``cls``; raises :class:`StructureError`."""
    result: T = _structure(value, cls)
    return result


def unstructure(value: Any) -> Any:
    """Turn wire objects (and lists/dicts of them) into camelCase JSON data, at any depth."""
    try:
        return _unstructure(value)
    except RecursionError:  # JSON data nested deeper than the interpreter recurses
        return _unstructure_deep(value)


def _unstructure_deep(value: Any) -> Any:
    """``_unstructure`` without recursion through lists and dicts (attrs objects still recurse)."""
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]  # (source, target container, key in it)
    while stack:
        src, target, key = stack.pop()
        out: Any = src
        if type(src) in _PRIMITIVES:
            pass
        elif attrs.has(type(src)):
            out = _unstructure_attrs_deep(src, stack)
        elif isinstance(src, list):
            out = [None] * len(src)
            stack.extend((v, out, i) for i, v in enumerate(src))
        elif isinstance(src, dict):
            out = dict.fromkeys(src)
            stack.extend((v, out, k) for k, v in src.items())
        target[key] = out
    return root[0]


def _unstructure_attrs_deep(value: Any, stack: list[tuple[Any, Any, Any]]) -> dict[str, Any]:
    specs, has_extra = _specs(type(value))
    out: dict[str, Any] = {}
    for spec in specs:
        v = getattr(value, spec.name)
        if v is None and not spec.keep_null:
            continue
        out[spec.wire] = v
        if not spec.raw:
            stack.append((v, out, spec.wire))
    if has_extra:
        for k, v in value.extra.items():
            if k not in out:
                out[k] = v
                stack.append((v, out, k))
    return out

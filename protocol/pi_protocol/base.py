"""Shared building blocks of the wire types.

Every wire class is an attrs class with snake_case fields; the converter maps
them to camelCase. A field may carry ``wire`` metadata to override the name.
Classes that model Pi's open JSON objects end with an ``extra`` field: unknown
keys land there and are written back after the known ones, so data from newer
Pi versions survives a load/save round trip.

Pi's entries and messages cross the wire as the JSON objects the store holds
(structuring each one into attrs classes would only cost time on the hot path,
and the bytes on the wire must not change): fields that carry them are typed
``Annotated[JsonDict, Raw(SessionEntry)]`` (see ``entries.RawEntry``,
``messages.RawMessage``). Python and the converter see a plain dict passed
through unchanged; the generated TypeScript sees the union named in ``Raw``.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

JsonDict = dict[str, Any]


@attrs.frozen
class Raw:
    """``Annotated`` marker: raw JSON that has the shape of the wire type ``of`` (passed through, never copied)."""

    of: Any
    name: str

_CAMEL = re.compile(r"_([a-z0-9])")


def camel(name: str) -> str:
    """``first_kept_entry_id`` -> ``firstKeptEntryId``."""
    return _CAMEL.sub(lambda m: m.group(1).upper(), name)


def wire(name: str, **kwargs: Any) -> Any:
    """An attrs field whose wire name is ``name`` instead of the camelCase default."""
    metadata = dict(kwargs.pop("metadata", {}))
    metadata["wire"] = name
    return attrs.field(metadata=metadata, **kwargs)


def extra_field() -> Any:
    """The catch-all for unknown keys (always the last field of an open class)."""
    return attrs.field(factory=dict, metadata={"extra": True}, kw_only=True)


def keep_null(**kwargs: Any) -> Any:
    """A field written even when it is ``None`` (Pi writes ``"parentId": null``)."""
    metadata = dict(kwargs.pop("metadata", {}))
    metadata["keep_null"] = True
    return attrs.field(metadata=metadata, **kwargs)

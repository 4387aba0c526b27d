"""The pygls converter: lsprotocol's, but custom params and results stay plain JSON.

pygls' default converter turns every object in a custom method's ``params``
into namedtuples (slow, lossy) and drops a request without ``params``
(pygls 2.1). Here the generic JSON-RPC message classes are built from
the top-level members only (missing ``params``/``result`` become ``None``,
unknown members are ignored); the pi/* handlers (:mod:`pi_sessiond.rpc.methods`) structure params themselves
with :func:`pi_protocol.structure`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import cattrs


def _top_level_hook(cls: type[Any]) -> Callable[[Any, Any], Any]:
    names = tuple(a.name for a in attrs.fields(cls))

    def hook(obj: Any, _: Any) -> Any:
        return cls(**{name: obj.get(name) for name in names})

    return hook


def raw_converter() -> cattrs.Converter:
    """lsprotocol's converter plus dict-preserving hooks for the generic message classes."""
    from pygls.protocol import (
        JsonRPCNotification,
        JsonRPCRequestMessage,
        JsonRPCResponseMessage,
        default_converter,
    )

    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]
    for cls in (JsonRPCRequestMessage, JsonRPCNotification, JsonRPCResponseMessage):
        converter.register_structure_hook(cls, _top_level_hook(cls))
    return converter

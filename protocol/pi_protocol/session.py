"""Results that describe sessions: open/create, context, tree dumps."""

from __future__ import annotations

from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_protocol.entries import RawEntry
from pi_protocol.messages import RawMessage


@attrs.define(kw_only=True)
class SessionWarning:
    """A line of the file that was skipped or repaired in memory (1-based)."""

    line: int
    message: str


@attrs.define(kw_only=True)
class ContextResult:
    """``pi/getContext``: messages exactly as Pi's ``buildSessionContext``."""

    messages: list[RawMessage]
    thinking_level: Any = "off"
    model: JsonDict | None = attrs.field(default=None, metadata={"keep_null": True})
    tokens: int = 0


@attrs.define(kw_only=True)
class TreeDump:
    """``pi-sessiond tree --json``: every entry in file order, after migration."""

    leaf_id: str | None = attrs.field(default=None, metadata={"keep_null": True})
    entries: list[RawEntry] = attrs.field(factory=list)

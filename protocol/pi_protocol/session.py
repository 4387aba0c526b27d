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
    """``pi/getContext``: messages exactly as Pi's ``buildSessionContext``.

    With ``format`` ``openai`` or ``anthropic`` the messages are that provider's
    (``system`` holds Anthropic's system prompt). ``context_window`` is the window
    in force, ``threshold`` the token count above which auto-compaction starts
    (``contextWindow - reserveTokens``), ``over_threshold`` whether ``tokens`` is above it.
    """

    messages: list[RawMessage]
    thinking_level: Any = "off"
    model: JsonDict | None = attrs.field(default=None, metadata={"keep_null": True})
    tokens: int = 0
    context_window: int = 0
    threshold: int = 0
    over_threshold: bool = False
    system: str | None = None


@attrs.define(kw_only=True)
class TreeDump:
    """``pi-sessiond tree --json``: every entry in file order, after migration."""

    leaf_id: str | None = attrs.field(default=None, metadata={"keep_null": True})
    entries: list[RawEntry] = attrs.field(factory=list)

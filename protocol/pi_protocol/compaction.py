"""What a compaction would do: the preparation as it crosses the wire.

``pi-sessiond compact --dry-run --json`` prints :class:`CompactionPreview`;
``pi/beforeCompact`` will carry the same fields. Messages are Pi's JSON
objects, passed through unchanged.
"""

from __future__ import annotations

from typing import Any

import attrs

from pi_protocol.base import keep_null


@attrs.define(kw_only=True)
class CompactionPreview:
    """A prepared compaction: what is summarized, what is kept, the exact request."""

    first_kept_entry_id: str
    is_split_turn: bool
    tokens_before: int
    messages_to_summarize: list[Any] = attrs.field(factory=list)
    turn_prefix_messages: list[Any] = attrs.field(factory=list)
    previous_summary: str | None = keep_null(default=None)
    read_files: list[str] = attrs.field(factory=list)
    modified_files: list[str] = attrs.field(factory=list)
    serialized: str = ""
    turn_prefix_serialized: str = ""
    prompt: str = ""
    nothing_to_compact: bool = False


@attrs.define(kw_only=True)
class CompactResult:
    """``pi/compact``: the entry written and the context size before and after."""

    entry: Any
    tokens_before: int
    tokens_after: int


@attrs.define(kw_only=True)
class NavigateResult:
    """``pi/navigateTree``: the new leaf, the summary entry written (if any), the editor text."""

    leaf_id: str | None = keep_null(default=None)
    entry: Any = None
    editor_text: str | None = None
    cancelled: bool = False

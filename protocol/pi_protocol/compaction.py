"""What a compaction would do: the preparation as it crosses the wire.

``pi-sessiond compact --dry-run --json`` prints :class:`CompactionPreview`;
``pi/beforeCompact`` carries the same fields. Messages and entries are Pi's
JSON objects, passed through unchanged (:data:`~pi_protocol.messages.RawMessage`,
:data:`~pi_protocol.entries.RawEntry`).
"""

from __future__ import annotations

from typing import Literal

import attrs

from pi_protocol.base import keep_null
from pi_protocol.entries import RawEntry
from pi_protocol.messages import RawMessage, Usage


@attrs.define(kw_only=True)
class SummaryRequestView:
    """One summarizer request exactly as it is sent: its purpose, both texts, output limit, reasoning level."""

    purpose: Literal["history", "turnPrefix", "branch"]
    system_prompt: str
    prompt: str
    max_tokens: int
    reasoning: str | None = keep_null(default=None)


RequestShape = Literal["serialized", "replay"]


@attrs.define(kw_only=True)
class RequestPlan:
    """How a compaction's history request is sent, and what each shape was estimated to cost.

    ``serialized``: Pi's request (the old messages as one text); ``replay``: the
    agent's last request as it was sent plus one summary instruction, read
    from the provider's prompt cache. ``reason`` says why the shape was
    chosen. Costs are dollars when ``priced``, else tokens weighted as the
    provider bills them (input 1, cache read 0.1, cache write 1.25).
    ``replay_tokens``/``replay_cached_tokens`` are ``0`` when no replay was possible.
    """

    shape: RequestShape = "serialized"
    reason: str = ""
    serialized_tokens: int = 0
    serialized_cost: float = 0.0
    replay_tokens: int = 0
    replay_cached_tokens: int = 0
    replay_cost: float | None = keep_null(default=None)
    priced: bool = False


@attrs.define(kw_only=True)
class CompactionPreview:
    """A prepared compaction: what is summarized, what is kept, the exact request."""

    first_kept_entry_id: str
    is_split_turn: bool
    tokens_before: int
    messages_to_summarize: list[RawMessage] = attrs.field(factory=list)
    turn_prefix_messages: list[RawMessage] = attrs.field(factory=list)
    previous_summary: str | None = keep_null(default=None)
    read_files: list[str] = attrs.field(factory=list)
    modified_files: list[str] = attrs.field(factory=list)
    serialized: str = ""
    turn_prefix_serialized: str = ""
    prompt: str = ""
    nothing_to_compact: bool = False
    requests: list[SummaryRequestView] = attrs.field(factory=list)
    request_shape: RequestShape = "serialized"
    request_plan: RequestPlan | None = None


@attrs.define(kw_only=True)
class GateAddition:
    """One hard fact the fidelity gate added to a summary that lacked it.

    ``kind``: ``constraint``, ``lastRequest``, ``lastError``, ``identifier`` or
    ``modifiedFile`` (a file changed through bash, added to the file lists).
    """

    kind: str
    text: str


@attrs.define(kw_only=True)
class Gate:
    """What the fidelity gate did to a summary before it was shown or written."""

    added: list[GateAddition] = attrs.field(factory=list)


@attrs.define(kw_only=True)
class CompactResult:
    """``pi/compact``, ``pi/reportOverflow``: the entry written and the context size before and after.

    ``estimated_tokens_after`` is Pi 1.6.0's (every message of the rebuilt
    context estimated, no usage figures); ``tokens_after`` is the same value,
    kept for older clients. ``usage`` is the summarizer's (cache reads and
    writes included), absent when a hook supplied the compaction without one.

    With ``compaction.masking`` on, a threshold or overflow compaction masks old
    tool results first: ``masked`` lists those ``context_edit`` entries and
    ``tokens_before`` is the size before them. ``outcome: "maskedOnly"`` means that
    was enough and no summary was written: ``entry`` is then the last edit.

    ``gate`` lists the facts the fidelity gate added (empty for a hook's entry).
    ``request_shape`` is how the history request was sent (``summarizer.cacheReuse``),
    ``request_plan`` the planner's choice and estimate (absent when no summary was asked for).

    ``already_fits`` (``pi/reportOverflow`` only, absent elsewhere): ``true`` when a
    compaction that landed after the context the client sent already made it fit;
    nothing more was done and ``entry`` is that compaction.
    """

    entry: RawEntry
    tokens_before: int
    tokens_after: int
    estimated_tokens_after: int
    usage: Usage | None = None
    outcome: Literal["compacted", "maskedOnly"] = "compacted"
    masked: list[RawEntry] = attrs.field(factory=list)
    gate: Gate = attrs.field(factory=Gate)
    request_shape: RequestShape = "serialized"
    request_plan: RequestPlan | None = None
    already_fits: bool | None = None


@attrs.define(kw_only=True)
class NavigateResult:
    """``pi/navigateTree``: the new leaf, the summary entry written (if any), the editor text."""

    leaf_id: str | None = keep_null(default=None)
    entry: RawEntry | None = None
    editor_text: str | None = None
    cancelled: bool = False

"""Token accounting exactly as Pi 1.6.0 does it (``estimateTokens``, ``calculateContextTokens``).

Invariants:

* ``estimate_tokens(m) == ceil(chars / 4)`` where chars are UTF-16 code units
  counted per role (every image block counts 4800 chars, user images too;
  tool calls count ``name`` plus ``JSON.stringify(arguments)``; summaries
  count the bare summary; a system message counts its content, its non-empty
  ``sections`` values and ``JSON.stringify(toolsAdded)``, not ``toolsRemoved``).
* A message has valid usage iff it is an assistant with a truthy ``usage``
  whose ``stopReason`` is neither ``aborted`` nor ``error`` and whose
  ``calculateContextTokens`` is above 0 (an all-zero usage is skipped).
* ``estimate_context_tokens`` = usage of the last valid message plus the
  estimates of the messages after it, or the sum of all estimates when no
  message has valid usage.
* ``estimate_projected_context_tokens`` trusts that usage only when its entry
  lies on the branch after the branch's newest ``context_edit`` or
  ``compaction``; otherwise it is the pure estimate of the replayed current
  system message plus every non-system projected message.
* ``should_compact`` is strict: ``tokens > window - reserve``.

Malformed messages never raise: a field of the wrong type counts as empty.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_protocol.settings import CompactionSettings as CompactionSettings
from pi_sessiond.compaction.text import js_stringify, js_truthy, utf16_len
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import TokenRule, role_kind
from pi_sessiond.store.projection import Projection
from pi_sessiond.store.system import current_system_message

IMAGE_CHARS = 4800
_USAGE_PARTS = ("input", "output", "cacheRead", "cacheWrite")


# Pi's ``compaction`` block is declared once, in the settings tree (pi_protocol.settings).
DEFAULT_COMPACTION_SETTINGS = CompactionSettings()


@attrs.frozen
class ContextTokenEstimate:
    """Result of ``estimate_context_tokens`` (Pi's ``ContextUsageEstimate``)."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None


def _chars(value: Any) -> int:
    return utf16_len(value) if isinstance(value, str) else 0


def _ceil_quarter(chars: int) -> int:
    return (chars + 3) // 4


def _block_chars(blocks: Any, *, images: bool) -> int:
    """Chars of the truthy text blocks (plus images when they count)."""
    if isinstance(blocks, str):
        return utf16_len(blocks)
    if not isinstance(blocks, list):
        return 0
    chars = 0
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and js_truthy(block.get("text")):
            chars += _chars(block.get("text"))
        elif kind == "image" and images:
            chars += IMAGE_CHARS
    return chars


def _assistant_chars(content: Any) -> int:
    if not isinstance(content, list):
        return 0
    chars = 0
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            chars += _chars(block.get("text"))
        elif kind == "thinking":
            chars += _chars(block.get("thinking"))
        elif kind == "toolCall":
            chars += _chars(block.get("name"))
            if "arguments" in block:
                chars += utf16_len(js_stringify(block["arguments"]))
    return chars


def _system_chars(message: JsonDict) -> int:
    chars = _block_chars(message.get("content"), images=True)
    sections = message.get("sections")
    if isinstance(sections, dict):
        chars += sum(_chars(v) for v in sections.values() if js_truthy(v))
    tools = message.get("toolsAdded")
    if js_truthy(tools):
        chars += utf16_len(js_stringify(tools))
    return chars


# One counter per ``RoleKind.tokens`` rule of the entry-kind table (1.6.0's counts).
_CHAR_RULES: dict[TokenRule, Callable[[JsonDict], int]] = {
    "user": lambda m: _block_chars(m.get("content"), images=True),
    "assistant": lambda m: _assistant_chars(m.get("content")),
    "blocks": lambda m: _block_chars(m.get("content"), images=True),
    "bash": lambda m: _chars(m.get("command")) + _chars(m.get("output")),
    "summary": lambda m: _chars(m.get("summary")),
    "system": _system_chars,
    "none": lambda m: 0,
}


def estimate_tokens(message: JsonDict) -> int:
    """Pi's ``estimateTokens``: a ``ceil(chars / 4)`` estimate of one agent message."""
    return _ceil_quarter(_CHAR_RULES[role_kind(message.get("role")).tokens](message))


def _number(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


def calculate_context_tokens(usage: JsonDict) -> int:
    """``totalTokens`` when truthy, else input + output + cacheRead + cacheWrite."""
    total = usage.get("totalTokens")
    if js_truthy(total) and isinstance(total, int | float) and not isinstance(total, bool):
        return int(total)
    return sum(_number(usage.get(part)) for part in _USAGE_PARTS)


def _usage_counts(usage: JsonDict) -> bool:
    """``calculateContextTokens(usage) > 0`` in JavaScript (a missing part makes the sum NaN)."""
    total = usage.get("totalTokens")
    if js_truthy(total) and isinstance(total, int | float) and not isinstance(total, bool):
        return total > 0
    parts: list[int | float] = []
    for name in _USAGE_PARTS:
        part = usage.get(name)
        if isinstance(part, bool) or not isinstance(part, int | float):
            return False
        parts.append(part)
    return sum(parts) > 0


def assistant_usage(message: JsonDict | None) -> JsonDict | None:
    """The usage of a message with valid usage (1.6.0 rule: all-zero usage skipped), else ``None``."""
    if message is None or message.get("role") != "assistant":
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    return usage if isinstance(usage, dict) and _usage_counts(usage) else None


def get_last_assistant_usage(entries: Sequence[Entry]) -> JsonDict | None:
    """Usage of the newest ``message`` entry with valid usage, scanning from the end."""
    for entry in reversed(entries):
        if entry.type == "message":
            usage = assistant_usage(entry.message)
            if usage is not None:
                return usage
    return None


def _last_usage(messages: Sequence[JsonDict]) -> tuple[int, JsonDict] | None:
    for index in range(len(messages) - 1, -1, -1):
        usage = assistant_usage(messages[index])
        if usage is not None:
            return index, usage
    return None


def estimate_context_tokens(messages: Sequence[JsonDict]) -> ContextTokenEstimate:
    """Pi's ``estimateContextTokens``: last valid usage plus trailing estimates."""
    found = _last_usage(messages)
    if found is None:
        estimated = sum(estimate_tokens(m) for m in messages)
        return ContextTokenEstimate(estimated, 0, estimated, None)
    index, usage = found
    usage_tokens = calculate_context_tokens(usage)
    trailing = sum(estimate_tokens(m) for m in messages[index + 1 :])
    return ContextTokenEstimate(usage_tokens + trailing, usage_tokens, trailing, index)


def _usage_entry_id(projection: Projection, message_index: int, total: int) -> str | None:
    """The id of the projected entry whose messages hold ``message_index`` (of ``total``).

    Walks back from the leaf: the usage is nearly always among the newest messages.
    """
    end = total
    for projected in reversed(projection.entries):
        end -= len(projected.messages)
        if end <= message_index:
            return projected.entry.id if projected.messages else None
    return None


def _usage_trusted(projection: Projection, branch: Sequence[Entry], message_index: int, total: int) -> bool:
    """Whether the usage's entry lies on ``branch`` after its newest edit or compaction."""
    usage_id = _usage_entry_id(projection, message_index, total)
    return usage_id is not None and usage_trusted_on(branch, usage_id)


def usage_trusted_on(branch: Sequence[Entry], usage_id: str) -> bool:
    """Whether entry ``usage_id`` lies on ``branch`` after the branch's newest edit or compaction.

    Scans back from the leaf and stops at that entry (ids are unique on a path).
    """
    for i in range(len(branch) - 1, -1, -1):
        entry = branch[i]
        if entry.id == usage_id:
            return True
        if entry.type in ("context_edit", "compaction"):
            return False
    return False


def estimate_projected_context_tokens(projection: Projection, branch: Sequence[Entry]) -> ContextTokenEstimate:
    """Pi 1.6.0's ``estimateProjectedContextTokens`` (see the module docstring)."""
    messages = projection.messages
    estimate = estimate_context_tokens(messages)
    index = estimate.last_usage_index
    if index is not None and _usage_trusted(projection, branch, index, len(messages)):
        return estimate
    tokens = pure_estimate(messages)
    return ContextTokenEstimate(tokens, 0, tokens, None)


def pure_estimate(messages: Sequence[JsonDict], estimate: Callable[[JsonDict], int] | None = None) -> int:
    """The context estimated without usage: the replayed current system message once, plus every
    other message (``estimate`` per message; default Pi's :func:`estimate_tokens`)."""
    one = estimate or estimate_tokens
    system = current_system_message(messages)
    tokens = one(system) if system is not None else 0
    return tokens + sum(one(m) for m in messages if m.get("role") != "system")


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Whether the context crossed the threshold (strictly above window - reserve)."""
    if not settings.enabled:
        return False
    return context_tokens > context_window - settings.reserve_tokens

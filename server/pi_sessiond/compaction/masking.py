"""The masking tier, pure: which old tool results to mask and the placeholder that replaces each.

Masking trims the context without a model: a bulky tool result far enough back
is replaced, through a Pi 1.6.0 ``context_edit`` (``replacement: {content}``), by
a short placeholder. The original stays in the raw history (``pi/getEntries``
returns it) and ``pi/unmask`` restores it with a later edit carrying the
original content (the latest edit per target wins, as Pi reads them).

The placeholder keeps what the agent needs to know the output existed and what
it said where it matters: the tool and its arguments (path, command, pattern),
the outcome (error or not, the exit code when the result has one), the size,
the decisive lines (for an error the tail, where the failing test, assertion or
last traceback line is; otherwise the first and last lines) and the id of the
original entry. Its first line starts with :data:`MARKER`, which is how a
result that is already masked is recognised.

Selection (:func:`select`) walks the projection from the leaf back, summing
each entry's estimated tokens: a ``toolResult`` message entry is a candidate
when its tool is in ``tools``, its own estimate is at least ``min_tokens`` and
at least ``older_than_tokens`` of context come after it, and no edit touched it
yet (a result someone else edited, or a person unmasked, is left as it is;
:func:`chosen` masks named entries regardless).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.projection import Projection

MARKER = "[masked tool output"
HEAD_LINES = 4
TAIL_LINES = 4
ERROR_TAIL_LINES = 12
LINE_CHARS = 160
ARGUMENT_CHARS = 300


@attrs.frozen
class MaskRule:
    """What :func:`select` masks (``compaction.masking`` without ``enabled``)."""

    tools: Collection[str]
    min_tokens: int
    older_than_tokens: int


@attrs.frozen
class Masked:
    """One tool result to mask: its entry, its tokens now and the placeholder's text."""

    entry: Entry
    tokens: int
    text: str


def is_masked(message: JsonDict) -> bool:
    """Whether ``message`` (as the projection shows it) is one of our placeholders."""
    content = message.get("content")
    first = content[0] if isinstance(content, list) and content else None
    text = first.get("text") if isinstance(first, dict) else content
    return isinstance(text, str) and text.startswith(MARKER)


def select(projection: Projection, rule: MaskRule, estimate: Callable[[JsonDict], int]) -> list[Masked]:
    """The tool results :data:`MaskRule` picks, oldest first (see the module docstring)."""
    calls = tool_calls(projection)
    after = 0
    picked: list[Masked] = []
    for projected in reversed(projection.entries):
        tokens = sum(estimate(m) for m in projected.messages)
        message = _tool_result(projected.entry, projected.messages)
        if (message is not None and projected.edit is None and after >= rule.older_than_tokens
                and tokens >= rule.min_tokens and message.get("toolName") in rule.tools):
            picked.append(Masked(projected.entry, tokens, placeholder(projected.entry, message, calls)))
        after += tokens
    picked.reverse()
    return picked


def chosen(projection: Projection, entry_ids: Iterable[str], estimate: Callable[[JsonDict], int]) -> list[Masked]:
    """Placeholders for the named entries (each a tool result in the projection, not yet masked).

    Raises ``KeyError`` naming the first id that is not such an entry.
    """
    calls = tool_calls(projection)
    shown = {p.entry.id: p for p in projection.entries}
    picked: list[Masked] = []
    for entry_id in entry_ids:
        projected = shown.get(entry_id)
        message = None if projected is None else _tool_result(projected.entry, projected.messages)
        if projected is None or message is None:
            raise KeyError(entry_id)
        tokens = sum(estimate(m) for m in projected.messages)
        picked.append(Masked(projected.entry, tokens, placeholder(projected.entry, message, calls)))
    return picked


def _tool_result(entry: Entry, messages: Sequence[JsonDict]) -> JsonDict | None:
    """The entry's one projected ``toolResult`` message when it is not masked already."""
    if entry.type != "message" or len(messages) != 1:
        return None
    message = messages[0]
    return message if message.get("role") == "toolResult" and not is_masked(message) else None


def tool_calls(projection: Projection) -> dict[str, JsonDict]:
    """Every tool call the projection's assistant messages make, by call id."""
    calls: dict[str, JsonDict] = {}
    for message in projection.messages:
        content = message.get("content") if message.get("role") == "assistant" else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                calls[block["id"]] = block
    return calls


def placeholder(entry: Entry, message: JsonDict, calls: dict[str, JsonDict]) -> str:
    """The text that stands for ``message`` (the tool result of ``entry``) in the context."""
    text = result_text(message)
    lines = text.splitlines()
    name = str(message.get("toolName") or "tool")
    call = calls.get(str(message.get("toolCallId")))
    failed = bool(message.get("isError")) or _exit_code(message) not in (None, 0)
    head = [f"{MARKER}: {name} — the original is entry {entry.id}; pi/unmask restores it]"]
    arguments = call.get("arguments") if call is not None else None
    if isinstance(arguments, dict) and arguments:
        head.append("arguments: " + _clip(json.dumps(arguments, ensure_ascii=False), ARGUMENT_CHARS))
    head.append(f"outcome: {_outcome(message, failed)}; {len(text)} characters, {len(lines)} lines")
    return "\n".join(head + _decisive(lines, failed))


def result_text(message: JsonDict) -> str:
    """The text blocks of a tool result joined by newlines (images are named, not kept)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif isinstance(block, dict) and block.get("type") == "image":
            parts.append(f"[image {block.get('mimeType', '')}]")
    return "\n".join(parts)


def _exit_code(message: JsonDict) -> Any:
    details = message.get("details")
    return details.get("exitCode") if isinstance(details, dict) else None


def _outcome(message: JsonDict, failed: bool) -> str:
    code = _exit_code(message)
    if failed:
        return "error" + (f" (exit code {code})" if code is not None else "")
    return "ok" + (f" (exit code {code})" if code is not None else "")


def _decisive(lines: Sequence[str], failed: bool) -> list[str]:
    """The lines kept: an error's tail, else the head and the tail."""
    if failed:
        kept = [*(["…"] if len(lines) > ERROR_TAIL_LINES else []), *lines[-ERROR_TAIL_LINES:]]
        label = "last lines:"
    elif len(lines) <= HEAD_LINES + TAIL_LINES:
        kept, label = list(lines), "lines:"
    else:
        kept, label = [*lines[:HEAD_LINES], "…", *lines[-TAIL_LINES:]], "first and last lines:"
    return [label, *(_clip(line, LINE_CHARS) for line in kept)] if kept else []


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"

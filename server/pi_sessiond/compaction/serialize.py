"""Conversation to plain text, the form summarizers receive.

Input is the output of ``convert_to_llm`` (roles ``user``, ``assistant``,
``toolResult``; anything else is ignored).

Invariants (Pi 1.6.0's ``serializeConversation``):

* One part per non-empty piece, parts joined by a blank line: ``[User]: ``,
  then per assistant ``[Assistant]: `` (texts joined by newlines; present
  when the message has at least one text block) and ``[Assistant tool
  calls]: `` (calls joined by ``"; "``, each ``name(k=JSON, k=JSON)``), and
  ``[Tool result]: `` for tool results. Thinking blocks are omitted. Block
  order inside an assistant message does not matter; images are dropped.
* Only tool-result text is truncated: above ``TOOL_RESULT_MAX_CHARS`` UTF-16
  units it keeps the start (``sliceHead``: one unit fewer when unit 2000
  would split a surrogate pair) and appends
  ``"\\n\\n[... N more characters truncated]"`` with N = length - 2000, as
  Pi counts it.

Deliberate difference from Pi (it has a test named after it):

* A tool call whose ``arguments`` is ``null`` or missing serializes as
  ``name()`` (Pi throws a ``TypeError`` and the whole compaction fails).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.text import (
    UNDEFINED,
    js_object_items,
    js_stringify,
    js_template,
    utf16_len,
    utf16_prefix,
    utf16_units,
)

TOOL_RESULT_MAX_CHARS = 2000


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """Keep the first ``max_chars`` UTF-16 units (never half a pair) plus Pi's marker.

    The marker counts ``length - max_chars`` as Pi 1.6.0 does, even when one
    unit fewer was kept to keep a surrogate pair whole.
    """
    length = utf16_len(text)
    if length <= max_chars:
        return text
    kept = utf16_prefix(text, max_chars)
    return f"{kept}\n\n[... {length - max_chars} more characters truncated]"


def _js_join(values: Sequence[Any], separator: str) -> str:
    """``Array.prototype.join``: ``null``/``undefined`` become empty strings."""
    return separator.join("" if v is None or v is UNDEFINED else js_template(v) for v in values)


def _text_of(content: Any) -> str:
    """String content as is, else the text blocks joined without separator."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = [b.get("text") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return _js_join(texts, "")


def _argument_pairs(args: Any) -> list[tuple[str, Any]]:
    """``Object.entries(args)``; ``null``/missing arguments give no pairs (our fix)."""
    if isinstance(args, dict):
        return js_object_items(args)
    if isinstance(args, list):
        return [(str(i), v) for i, v in enumerate(args)]
    if isinstance(args, str):
        return [(str(i), unit) for i, unit in enumerate(utf16_units(args))]
    return []


def format_tool_call(block: JsonDict) -> str:
    """``name(k1=JSON(v1), k2=JSON(v2))`` with arguments in JavaScript key order."""
    pairs = _argument_pairs(block.get("arguments"))
    args = ", ".join(f"{key}={js_stringify(value)}" for key, value in pairs)
    return f"{js_template(block.get('name', UNDEFINED))}({args})"


def _assistant_parts(content: Any) -> list[str]:
    texts: list[Any] = []
    calls: list[str] = []
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text", UNDEFINED))
        elif kind == "toolCall":
            calls.append(format_tool_call(block))
    parts = []
    if texts:
        parts.append("[Assistant]: " + _js_join(texts, "\n"))
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_message(message: JsonDict) -> list[str]:
    """The serialized parts of one LLM message (possibly none)."""
    role = message.get("role")
    if role == "user":
        text = _text_of(message.get("content"))
        return [f"[User]: {text}"] if text else []
    if role == "assistant":
        return _assistant_parts(message.get("content"))
    if role == "toolResult":
        text = _text_of(message.get("content"))
        return [f"[Tool result]: {truncate_for_summary(text)}"] if text else []
    return []


def serialize_conversation(messages: Sequence[JsonDict]) -> str:
    """Pi 1.6.0's ``serializeConversation`` (with the deliberate fix above)."""
    return "\n\n".join(conversation_parts(messages))


def conversation_parts(messages: Sequence[JsonDict]) -> list[str]:
    """The pieces :func:`serialize_conversation` joins with blank lines."""
    parts: list[str] = []
    for message in messages:
        parts.extend(serialize_message(message))
    return parts

"""A session's context as a provider's request messages: OpenAI Chat Completions or Anthropic Messages.

Invariants (pure; messages are Pi's JSON shapes in, the provider's out):

* Pi's roles are converted first as Pi's ``convertToLlm`` does (``compaction.convert``):
  summaries become user messages in Pi's own wrapper words.
* As Pi's provider layer does before every request: an assistant message that
  ended in ``error`` or ``aborted`` is left out, and every tool call without a
  result before the next assistant or user message (or the end) gets a
  synthetic error result ``No result provided``, so each call is paired.
  A system message met while calls wait for results follows those results;
  a result whose call is not the waiting one (its answer was left out) is left out too.
* OpenAI: system messages stay in place (role ``system``); an assistant's text
  blocks are joined into one string, its calls become ``tool_calls`` with
  JSON-string ``arguments``; each result is a ``tool`` message of its text.
* Anthropic: the first system message is the ``system`` prompt, a later one a
  user text; calls become ``tool_use`` blocks, results ``tool_result`` blocks
  of a user message; consecutive messages of one role are merged, so roles
  alternate; tool ids are cut to Anthropic's alphabet and 64 characters.
* Thinking is sent back only where the provider can check it (Anthropic, with
  its signature); empty texts are left out; a message left empty is dropped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.convert import convert_to_llm

NO_RESULT = "No result provided"
IMAGE_OMITTED = "(image omitted)"
_ANTHROPIC_ID = re.compile(r"[^a-zA-Z0-9_-]")


# ------------------------------------------------------------- shared passes
def paired(messages: Sequence[JsonDict]) -> list[JsonDict]:
    """Pi's messages as its provider layer replays them (see the module docstring)."""
    out: list[JsonDict] = []
    pending: list[JsonDict] = []
    answered: set[str] = set()
    held: list[JsonDict] = []

    def close() -> None:
        out.extend(_synthetic(call) for call in pending if str(call.get("id")) not in answered)
        pending.clear()
        answered.clear()
        out.extend(held)
        held.clear()

    for msg in convert_to_llm(messages):
        role = msg.get("role")
        if role == "assistant":
            close()
            if msg.get("stopReason") in ("error", "aborted"):
                continue
            pending.extend(b for b in _blocks(msg) if b.get("type") == "toolCall")
            out.append(msg)
        elif role == "toolResult":
            if any(call.get("id") == msg.get("toolCallId") for call in pending):
                answered.add(str(msg.get("toolCallId")))
                out.append(msg)
        elif role == "system" and pending:
            held.append(msg)
        else:
            if role == "user":
                close()
            out.append(msg)
    close()
    return out


def _synthetic(call: JsonDict) -> JsonDict:
    return {"role": "toolResult", "toolCallId": call.get("id"), "toolName": call.get("name"),
            "content": [{"type": "text", "text": NO_RESULT}], "isError": True}


def _blocks(msg: JsonDict) -> list[JsonDict]:
    content = msg.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _text(blocks: Iterable[JsonDict], separator: str = "\n") -> str:
    return separator.join(str(b.get("text") or "") for b in blocks if b.get("type") == "text")


def system_text(msg: JsonDict, first: bool) -> str:
    """A system message's prompt: the first one whole, a later one as an update naming its sections."""
    parts = [_text(_blocks(msg))]
    raw = msg.get("sections")
    sections: JsonDict = raw if isinstance(raw, dict) else {}
    for name, value in sections.items():
        if first and value is not None:
            parts.append(str(value))
        elif not first:
            parts.append(f'Removed system prompt section "{name}".' if value is None
                         else f'Updated system prompt section "{name}":\n\n{value}')
    return "\n\n".join(p for p in parts if p)


# ------------------------------------------------------------------- OpenAI
def to_openai(messages: Sequence[JsonDict]) -> list[JsonDict]:
    """Chat Completions ``messages`` of a context."""
    out: list[JsonDict] = []
    systems = 0
    for msg in paired(messages):
        role = msg.get("role")
        if role == "system":
            text = system_text(msg, systems == 0)
            systems += 1
            if text:
                out.append({"role": "system", "content": text})
        elif role == "user":
            user = _openai_user(msg)
            if user is not None:
                out.append(user)
        elif role == "assistant":
            assistant = _openai_assistant(msg)
            if assistant is not None:
                out.append(assistant)
        elif role == "toolResult":
            out.append({"role": "tool", "tool_call_id": str(msg.get("toolCallId")),
                        "content": _result_text(msg)})
    return out


def _openai_user(msg: JsonDict) -> JsonDict | None:
    content = msg.get("content")
    if isinstance(content, str):
        return {"role": "user", "content": content}
    parts: list[JsonDict] = []
    for block in _blocks(msg):
        if block.get("type") == "text" and block.get("text"):
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            url = f"data:{block.get('mimeType')};base64,{block.get('data')}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": parts} if parts else None


def _openai_assistant(msg: JsonDict) -> JsonDict | None:
    blocks = _blocks(msg)
    text = "".join(str(b.get("text")) for b in blocks if b.get("type") == "text" and str(b.get("text") or "").strip())
    calls = [{"id": str(b.get("id")), "type": "function",
              "function": {"name": str(b.get("name")), "arguments": json.dumps(b.get("arguments") or {})}}
             for b in blocks if b.get("type") == "toolCall"]
    if not text and not calls:
        return None
    out: JsonDict = {"role": "assistant", "content": text or None}
    if calls:
        out["tool_calls"] = calls
    return out


def _result_text(msg: JsonDict) -> str:
    parts = [str(b.get("text") or "") if b.get("type") == "text" else IMAGE_OMITTED for b in _blocks(msg)]
    return "\n".join(p for p in parts if p) or "(no output)"


# ---------------------------------------------------------------- Anthropic
def to_anthropic(messages: Sequence[JsonDict]) -> tuple[str | None, list[JsonDict]]:
    """Messages API ``system`` and ``messages`` of a context."""
    system: str | None = None
    out: list[JsonDict] = []
    for msg in paired(messages):
        role = msg.get("role")
        if role == "system":
            text = system_text(msg, system is None)
            if system is None:
                system = text
            elif text:
                _add(out, "user", [{"type": "text", "text": text}])
        elif role == "user":
            _add(out, "user", _anthropic_user(msg))
        elif role == "assistant":
            _add(out, "assistant", _anthropic_assistant(msg))
        elif role == "toolResult":
            _add(out, "user", [_tool_result(msg)])
    return system or None, out


def _add(out: list[JsonDict], role: str, blocks: list[JsonDict]) -> None:
    """Append ``blocks`` as a ``role`` message, merged into the last one of the same role."""
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)
    else:
        out.append({"role": role, "content": blocks})


def _anthropic_user(msg: JsonDict) -> list[JsonDict]:
    blocks: list[JsonDict] = []
    for block in _blocks(msg):
        if block.get("type") == "text" and block.get("text"):
            blocks.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            blocks.append(_image(block))
    return blocks


def _image(block: JsonDict) -> JsonDict:
    return {"type": "image", "source": {"type": "base64", "media_type": block.get("mimeType"),
                                        "data": block.get("data")}}


def _anthropic_assistant(msg: JsonDict) -> list[JsonDict]:
    blocks: list[JsonDict] = []
    for block in _blocks(msg):
        kind = block.get("type")
        if kind == "text" and str(block.get("text") or "").strip():
            blocks.append({"type": "text", "text": block["text"]})
        elif kind == "thinking" and block.get("thinkingSignature") and block.get("thinking"):
            blocks.append({"type": "thinking", "thinking": block["thinking"],
                           "signature": block["thinkingSignature"]})
        elif kind == "toolCall":
            blocks.append({"type": "tool_use", "id": anthropic_id(block.get("id")), "name": str(block.get("name")),
                           "input": block.get("arguments") or {}})
    return blocks


def _tool_result(msg: JsonDict) -> JsonDict:
    content: list[JsonDict] = []
    for block in _blocks(msg):
        if block.get("type") == "text" and block.get("text"):
            content.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image" and not msg.get("isError"):
            content.append(_image(block))
    out: JsonDict = {"type": "tool_result", "tool_use_id": anthropic_id(msg.get("toolCallId")),
                     "content": content or [{"type": "text", "text": "(no output)"}]}
    if msg.get("isError"):
        out["is_error"] = True
    return out


def anthropic_id(value: Any) -> str:
    """A tool call id in Anthropic's alphabet (``[a-zA-Z0-9_-]``, at most 64 characters)."""
    return _ANTHROPIC_ID.sub("_", str(value))[:64] or "_"

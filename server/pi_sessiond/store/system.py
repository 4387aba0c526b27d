"""The current system message: Pi 1.6.0's ``getCurrentSystemMessage`` (pi-ai ``utils/transcript``).

``current_system_message(messages)`` replays every ``role: "system"`` message
in order:

* non-empty ``content`` texts (a string, or text blocks joined with ``"\\n"``)
  are joined with ``"\\n\\n"``;
* ``sections`` are patched by name into one ordered map (``null`` deletes);
* tools are resolved by name, each message's ``toolsRemoved`` before its
  ``toolsAdded``; a re-added tool moves to the end (JavaScript ``Map`` order);
* ``timestamp`` is the first system message's (the first non-null one; 0 if none).

The result is ``{role, content, sections?, toolsAdded?, timestamp}`` with each
optional field only when non-empty, or ``None`` when there is no system
message and no tool. This is what a compaction's ``systemMessage`` checkpoint
holds (with the compaction's own time as ``timestamp``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pi_protocol.base import JsonDict

_MISSING: Any = object()


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    )


def current_tools(messages: Iterable[JsonDict]) -> list[JsonDict]:
    """pi-ai's ``getCurrentTools``: the tool declarations after every system message."""
    tools: dict[Any, JsonDict] = {}
    for message in messages:
        if message.get("role") != "system":
            continue
        for tool in message.get("toolsRemoved") or ():
            if isinstance(tool, dict):
                tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or ():
            if isinstance(tool, dict):
                tools[tool.get("name")] = tool  # like a Map, an update keeps its place
    return list(tools.values())


def current_system_message(messages: Iterable[JsonDict]) -> JsonDict | None:
    """Replay the system messages of ``messages`` (see the module docstring)."""
    messages = list(messages)
    content: list[str] = []
    sections: dict[str, Any] = {}
    timestamp: Any = _MISSING
    for message in messages:
        if message.get("role") != "system":
            continue
        if timestamp is _MISSING or timestamp is None:  # `??=`
            timestamp = message.get("timestamp", _MISSING)
        text = _text(message.get("content"))
        if text:
            content.append(text)
        patch = message.get("sections")
        for name, value in (patch.items() if isinstance(patch, dict) else ()):
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
    tools = current_tools(messages)
    if timestamp is _MISSING and not tools:
        return None
    out: JsonDict = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        out["sections"] = sections
    if tools:
        out["toolsAdded"] = tools
    out["timestamp"] = 0 if timestamp is _MISSING or timestamp is None else timestamp
    return out

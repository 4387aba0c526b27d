"""Content blocks inside messages: text, thinking, tool calls and images."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from pi_protocol.base import JsonDict, extra_field


@attrs.define(kw_only=True)
class TextContent:
    type: Literal["text"] = "text"
    text: str
    text_signature: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ThinkingContent:
    type: Literal["thinking"] = "thinking"
    thinking: str
    thinking_signature: str | None = None
    redacted: bool | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ToolCall:
    type: Literal["toolCall"] = "toolCall"
    id: str
    name: str
    arguments: Any = None
    thought_signature: str | None = None
    extra: JsonDict = extra_field()


@attrs.define(kw_only=True)
class ImageContent:
    type: Literal["image"] = "image"
    data: str
    mime_type: str
    extra: JsonDict = extra_field()


ContentBlock = TextContent | ThinkingContent | ToolCall | ImageContent
"""A known content block; blocks of unknown ``type`` stay plain dicts."""

CONTENT_TYPES: dict[str, type[Any]] = {
    "text": TextContent,
    "thinking": ThinkingContent,
    "toolCall": ToolCall,
    "image": ImageContent,
}

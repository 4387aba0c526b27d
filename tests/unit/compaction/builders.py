"""Small builders for session entries and messages used by the compaction tests.

Entries get ids ``e0000``, ``e0001``… and chain to the previous entry unless a
parent is given; timestamps are one second apart from a fixed base.
"""

from __future__ import annotations

from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.store.entry import Entry

BASE_MS = 1_760_000_000_000


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    stamp = datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def usage(total: int = 0, **parts: int) -> JsonDict:
    base = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": total}
    base.update(parts)
    return base


def user_msg(content: str | list[JsonDict]) -> JsonDict:
    return {"role": "user", "content": content, "timestamp": BASE_MS}


def assistant_msg(
    text: str | None = None,
    *,
    thinking: str | None = None,
    calls: list[tuple[str, Any]] | None = None,
    stop: str = "stop",
    use: JsonDict | None = None,
) -> JsonDict:
    content: list[JsonDict] = []
    if thinking is not None:
        content.append({"type": "thinking", "thinking": thinking})
    if text is not None:
        content.append({"type": "text", "text": text})
    for i, (name, args) in enumerate(calls or []):
        content.append({"type": "toolCall", "id": f"call_{i}", "name": name, "arguments": args})
    msg: JsonDict = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-test",
        "usage": use if use is not None else usage(),
        "stopReason": stop,
        "timestamp": BASE_MS,
    }
    return msg


def tool_result_msg(text: str, name: str = "bash", *, images: int = 0) -> JsonDict:
    content: list[JsonDict] = [{"type": "text", "text": text}]
    content += [{"type": "image", "data": "AAAA", "mimeType": "image/png"}] * images
    return {
        "role": "toolResult",
        "toolCallId": "call_0",
        "toolName": name,
        "content": content,
        "isError": False,
        "timestamp": BASE_MS,
    }


def bash_msg(command: str, output: str, **extra: Any) -> JsonDict:
    msg: JsonDict = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": BASE_MS,
    }
    msg.update(extra)
    return msg


class PathBuilder:
    """Builds a list of entries; each new entry is a child of the previous one."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.counter = 0

    @classmethod
    def extending(cls, entries: list[Entry]) -> PathBuilder:
        """A builder that appends to ``entries`` with ids that cannot collide (``e9000``…)."""
        b = cls()
        b.entries = list(entries)
        b.counter = 9000
        return b

    def add(self, type_: str, parent: str | bool | None = True, **fields: Any) -> Entry:
        n = self.counter
        self.counter += 1
        if parent is True:
            parent_id = self.entries[-1].id if self.entries else None
        else:
            parent_id = parent if isinstance(parent, str) else None
        data: JsonDict = {
            "type": type_,
            "id": f"e{n:04d}",
            "parentId": parent_id,
            "timestamp": iso(BASE_MS + n * 1000),
        }
        data.update(fields)
        entry = Entry.from_data(data)
        self.entries.append(entry)
        return entry

    def msg(self, message: JsonDict, parent: str | bool | None = True) -> Entry:
        return self.add("message", parent, message=message)

    def user(self, text: str = "hello", parent: str | bool | None = True) -> Entry:
        return self.msg(user_msg(text), parent)

    def assistant(self, text: str | None = "ok", **kw: Any) -> Entry:
        return self.msg(assistant_msg(text, **kw))

    def tool(self, text: str = "result", name: str = "bash") -> Entry:
        return self.msg(tool_result_msg(text, name))

    def bash(self, command: str = "ls", output: str = "a b", **extra: Any) -> Entry:
        return self.msg(bash_msg(command, output, **extra))

    def custom_message(self, content: Any = "note", **extra: Any) -> Entry:
        fields = {"customType": "ext", "content": content, "display": True, **extra}
        return self.add("custom_message", **fields)

    def branch_summary(self, summary: str = "went elsewhere", **extra: Any) -> Entry:
        return self.add("branch_summary", fromId="e0000", summary=summary, **extra)

    def compaction(self, first_kept: str, summary: str = "old summary", **extra: Any) -> Entry:
        fields = {"summary": summary, "firstKeptEntryId": first_kept, "tokensBefore": 1234}
        return self.add("compaction", **fields, **extra)

    def thinking(self, level: str = "high") -> Entry:
        return self.add("thinking_level_change", thinkingLevel=level)

    def model(self) -> Entry:
        return self.add("model_change", provider="anthropic", modelId="claude-test")

    def label(self, target: str, label: str = "x") -> Entry:
        return self.add("label", targetId=target, label=label)

    def by_id(self) -> dict[str, Entry]:
        return {e.id: e for e in self.entries}


def chars(n: int, ch: str = "x") -> str:
    """A string whose estimate is ``n // 4`` tokens when it is a message's only text."""
    return ch * n

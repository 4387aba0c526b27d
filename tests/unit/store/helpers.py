"""Builders for small hand-made sessions in tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/w"}


def ts(n: int) -> str:
    return f"2026-01-01T00:00:{n:02d}.000Z"


def user(eid: str, parent: str | None, text: str, n: int = 1) -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts(n),
            "message": {"role": "user", "content": text, "timestamp": n}}


def assistant(eid: str, parent: str | None, text: str, n: int = 2, model: str = "m1") -> dict[str, Any]:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts(n),
            "message": {"role": "assistant", "content": [{"type": "text", "text": text}],
                        "api": "x", "provider": "p", "model": model,
                        "usage": {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0,
                                  "totalTokens": 15, "cost": {"input": 0, "output": 0, "cacheRead": 0,
                                                              "cacheWrite": 0, "total": 0}},
                        "stopReason": "stop", "timestamp": n}}


def compaction(eid: str, parent: str, kept: str, n: int = 5) -> dict[str, Any]:
    return {"type": "compaction", "id": eid, "parentId": parent, "timestamp": ts(n),
            "summary": f"summary {eid}", "firstKeptEntryId": kept, "tokensBefore": 100}


def write_lines(path: Path, lines: list[dict[str, Any]], header: bool = True) -> Path:
    rows = ([HEADER] if header else []) + lines
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
    return path


def chain(n: int, start: int = 0, parent: str | None = None) -> list[dict[str, Any]]:
    """``n`` user/assistant turns, each the child of the one before; ids ``e<start>`` on."""
    lines: list[dict[str, Any]] = []
    for i in range(start, start + n):
        eid = f"e{i:05d}"
        make = user if i % 2 == 0 else assistant
        lines.append(make(eid, parent, f"turn {i} " + "x" * 200, i % 50))
        parent = eid
    return lines


def thinking(eid: str, parent: str | None, level: str) -> dict[str, Any]:
    return {"type": "thinking_level_change", "id": eid, "parentId": parent, "timestamp": ts(1), "thinkingLevel": level}


def compacted(before: int, after: int, *, kept_back: int = 20) -> list[dict[str, Any]]:
    """A chain of ``before`` turns, a compaction keeping the last ``kept_back`` of them, ``after`` more turns."""
    lines = chain(before)
    last = lines[-1]["id"]
    lines.append(compaction("c1", last, lines[-kept_back]["id"]))
    lines += chain(after, before, "c1")
    return lines

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

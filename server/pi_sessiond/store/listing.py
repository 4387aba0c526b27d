"""Listing the sessions of a directory, as Pi's session picker does.

For each ``*.jsonl`` file with a valid header: ``sessionId``, ``path``,
``name`` (last ``session_info`` name in file order), ``cwd``, ``created``
(header timestamp), ``modified`` (latest user/assistant message time, else the
header time, else the file's mtime), ``messageCount`` (message entries) and
``firstMessage`` (first user text, or ``(no messages)``); newest first.
Unreadable or header-less files are skipped, and so is everything
``store/pathcheck.py`` refuses (FIFOs, devices, sockets, directories, symlinks
to them, files above ``max_bytes`` or the line limit): nothing is read from
those, so a FIFO cannot hang a listing nor a link to ``/dev/zero`` fill memory.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.store.errors import NotASessionError, TooLargeError
from pi_sessiond.store.pathcheck import DEFAULT_MAX_SESSION_BYTES, check_line_count, check_session_file
from pi_sessiond.store.reader import read_session_file
from pi_sessiond.store.tree import timestamp_ms


def list_sessions(directory: Path, max_bytes: int = DEFAULT_MAX_SESSION_BYTES) -> list[JsonDict]:
    """Session summaries of ``directory``, newest ``modified`` first."""
    if not directory.is_dir():
        return []
    found = []
    for path in directory.glob("*.jsonl"):
        info = session_info(path, max_bytes)
        if info is not None:
            found.append(info)
    found.sort(key=lambda s: s["_modifiedMs"], reverse=True)
    for info in found:
        del info["_modifiedMs"]
    return found


def session_info(path: Path, max_bytes: int = DEFAULT_MAX_SESSION_BYTES) -> JsonDict | None:
    """The listing row of one file, or ``None`` when it is not a session (or is refused by the path check)."""
    try:
        mtime = check_session_file(path, max_bytes).st_mtime * 1000.0
        result = read_session_file(path)
        check_line_count(path, result.line_count)
    except (OSError, NotASessionError, TooLargeError):
        return None
    header = result.header
    if header is None:
        return None
    name: str | None = None
    first: str | None = None
    count = 0
    latest: float | None = None
    for entry in result.entries:
        if entry.type == "session_info":
            value = entry.data.get("name")
            name = value.strip() or None if isinstance(value, str) else None
        if entry.type != "message":
            continue
        count += 1
        message = entry.message or {}
        role = message.get("role")
        if role not in ("user", "assistant"):
            continue
        when = message.get("timestamp")
        ms = float(when) if isinstance(when, int | float) else timestamp_ms(entry.timestamp)
        if ms == ms:
            latest = ms if latest is None else max(latest, ms)
        if role == "user" and first is None:
            first = _text(message.get("content")) or None
    created = header.get("timestamp") if isinstance(header.get("timestamp"), str) else None
    modified = latest if latest is not None else (timestamp_ms(created) if created else mtime)
    if modified != modified:
        modified = mtime
    return {
        "sessionId": header.get("id"),
        "path": str(path),
        "name": name,
        "cwd": header.get("cwd") if isinstance(header.get("cwd"), str) else "",
        "created": created,
        "modified": _iso(modified),
        "messageCount": count,
        "firstMessage": first or "(no messages)",
        "_modifiedMs": modified,
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return " ".join(
        b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    )


def _iso(ms: float) -> str:
    moment = datetime.fromtimestamp(ms / 1000.0, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"

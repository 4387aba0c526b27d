"""Reading a session file one line at a time: header, entries and what had to be skipped.

This is the reference reader. ``Session.open`` goes through ``scan.py``, which
reads the standard message lines of a v3 file without a Python loop or object
per line and hands every other line to :func:`_read_line` here, so both give
the same entries, warnings and kept lines (``tests/unit/store/test_scan.py``);
this module alone reads old versions, files without a header on line 1, and
the lines other programs append (``Session._fold_in``).

Lazy bodies: Pi writes every entry as ``{"type":…,"id":…,"parentId":…,
"timestamp":…`` first, so a message line's skeleton is read with one regex and
the rest of the line is parsed only when needed (``Entry.data``). Lines that do
not match (legacy v1 lines, ``custom`` entries, hand-edited files), the other
entry types, and lines long enough to be nested deeper than ``MAX_DEPTH`` are
parsed in full.

Depth: lines nested up to ``jsontext.MAX_DEPTH`` (100,000) levels are read (Pi's
``JSON.parse`` reads them too); a deeper line is skipped with a warning and
stays in the file byte for byte: a rewrite never drops it (``ReadResult.kept``
carries it to ``Session.render``, which copies it as it was).

Never raises for bad content: malformed lines, a torn last line (a crash in the
middle of a write), a second header, a missing header and entries without an id
are reported as warnings with 1-based line numbers and skipped.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import attrs

from pi_sessiond.jsonio.jsontext import MAX_DEPTH, TooDeepError, loads
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.table import EntryTable

_SKELETON = re.compile(
    rb'\{"type":"([a-z_]+)","id":"([^"\\]*)","parentId":(?:null|"([^"\\]*)"),"timestamp":"([^"\\]*)"'
    rb'(?:,"message":\{"role":"([A-Za-z_]+)")?'
)
# Small entries the store needs at load time (labels, names, compactions…): parse now.
_LAZY_TYPES = frozenset({b"message"})
# Only a line this long can be nested deeper than MAX_DEPTH: such lines are parsed at
# load time, so a line too deep for us is skipped (with a warning) when the file opens.
_LAZY_MAX_BYTES = 2 * MAX_DEPTH
_WS = b" \t\r"


@attrs.frozen
class Warning:
    """Something in the file that was skipped or repaired in memory."""

    line: int
    message: str


@attrs.define
class ReadResult:
    """A session file as read: nothing here has been migrated yet."""

    header: dict[str, Any] | None
    entries: list[Entry] | EntryTable
    warnings: list[Warning]
    size: int
    ends_with_newline: bool
    header_line: int = 0
    line_count: int = 0
    kept: list[tuple[Entry | None, bytes]] = attrs.Factory(list)
    """Skipped lines a rewrite must copy as they are: (the entry before the line or None, the line)."""


def read_session_file(path: Path) -> ReadResult:
    """Read ``path``; see the module docstring for what is skipped."""
    buf = path.read_bytes()
    return parse_session_bytes(buf)


def parse_session_bytes(buf: bytes, *, header: dict[str, Any] | None = None, first_line: int = 1) -> ReadResult:
    """Parse a whole session file held in memory.

    With ``header`` the bytes are a continuation (lines appended to a file whose
    header we already have); ``first_line`` numbers their first line.
    """
    result = ReadResult(header, [], [], len(buf), buf.endswith(b"\n"))
    pos, size, line_no = 0, len(buf), first_line - 1
    find, match, add = buf.find, _SKELETON.match, result.entries.append
    have_header = header is not None
    while pos < size:
        end = find(b"\n", pos)
        if end < 0:
            end = size
        line_no += 1
        # Hot path: a complete, newline-terminated message line after the header.
        if have_header and end < size and buf[end - 1] == 0x7D and end - pos < _LAZY_MAX_BYTES:
            m = match(buf, pos, end)
            if m is not None and m.group(1) == b"message":
                eid, parent, ts, role = m.group(2, 3, 4, 5)
                pid = parent.decode() if parent is not None else None
                add(Entry(eid.decode(), pid, "message", ts.decode(), None, buf, pos, end, line_no,
                          role.decode() if role is not None else None))
                pos = end + 1
                continue
        start, stop = _trim(buf, pos, end)
        if start < stop:
            _read_line(buf, start, stop, line_no, end == size, result)
            have_header = result.header is not None
        pos = end + 1
    result.line_count = line_no - first_line + 1
    return result


def _trim(buf: bytes, start: int, stop: int) -> tuple[int, int]:
    while start < stop and buf[start] in _WS:
        start += 1
    while stop > start and buf[stop - 1] in _WS:
        stop -= 1
    return start, stop


def _read_line(buf: bytes, start: int, stop: int, line_no: int, last: bool, out: ReadResult) -> None:
    m = _SKELETON.match(buf, start, stop)
    lazy = m is not None and m.group(1) in _LAZY_TYPES and stop - start < _LAZY_MAX_BYTES
    if m is not None and lazy and buf[stop - 1] == 0x7D and not last:
        if out.header is None and not out.entries:
            out.warnings.append(Warning(line_no, "missing session header"))
            out.header_line = -1
        parent, role = m.group(3, 5)
        out.entries.append(
            Entry(
                m.group(2).decode(),
                parent.decode() if parent is not None else None,
                "message",
                m.group(4).decode(),
                src=buf,
                start=start,
                end=stop,
                line=line_no,
                role=role.decode() if role is not None else None,
            )
        )
        return
    try:
        obj = loads(buf[start:stop])
    except TooDeepError:
        out.warnings.append(Warning(line_no, f"line nested deeper than {MAX_DEPTH} levels skipped (kept in the file)"))
        out.kept.append((out.entries[-1] if out.entries else None, buf[start:stop]))
        return
    except (ValueError, UnicodeDecodeError):
        what = "torn last line (incomplete write) ignored" if last else "malformed JSON line skipped"
        out.warnings.append(Warning(line_no, what))
        return
    _add_object(obj, buf, start, stop, line_no, out)


def _add_object(obj: Any, buf: bytes, start: int, stop: int, line_no: int, out: ReadResult) -> None:
    if not isinstance(obj, dict):
        out.warnings.append(Warning(line_no, "line is not a JSON object; skipped"))
        return
    if obj.get("type") == "session":
        if out.header is None and not out.entries and isinstance(obj.get("id"), str):
            out.header = obj
            out.header_line = line_no
        else:
            out.warnings.append(Warning(line_no, "extra session header skipped"))
        return
    if out.header is None and not out.entries:
        out.warnings.append(Warning(line_no, "missing session header"))
        out.header_line = -1
    entry = Entry.from_data(obj, line=line_no)
    entry._src, entry._start, entry._end = buf, start, stop
    if not isinstance(obj.get("id"), str):
        entry.id = ""
    out.entries.append(entry)

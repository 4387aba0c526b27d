"""Opening a v3 session file without a Python loop or object per line.

Pi writes every message line as ``{"type":"message","id":…,"parentId":…,
"timestamp":…``. One compiled regex, run by ``findall`` over the whole buffer
chunk by chunk (C speed, no per-line bytecode), yields a row per newline:
whether the line before it ends in ``}``, and the id and parent of the line
after it when that line has the standard prefix. A line is *deferred* (kept as
its id and parent in an :class:`~pi_sessiond.store.table.EntryTable` column,
its :class:`~pi_sessiond.store.entry.Entry` made on first use) when:

- it is a ``message`` with the standard prefix, its id and parent printable
  ASCII without quotes or backslashes (so they decode as they are),
- it ends in ``}`` right before its newline (a torn or cut line never does),
- it is shorter than ``reader._LAZY_MAX_BYTES``: every line at least that
  long spans a whole newline-free window of half that size, and the windows
  are checked with ``bytes.find`` (a few hundred calls).

Every other line — the header, labels, session names, compactions and the
other small entries open must know, lines with their fields in another order,
escaped ids, blank, broken, torn or deep lines — is read by the per-line
reader (``reader._read_line``), in file order, so warnings, line numbers and
skipped lines are exactly what ``reader.parse_session_bytes`` reports, and a
deferred entry, once made, equals the one the reader makes: the reader's own
skeleton regex reads it (a deferred line's prefix is one the reader reads
lazily too), or, when its timestamp holds an escape the skeleton regex does not
read (the scan does not look at timestamps: they are a quarter of its regex
time), it is parsed in full as the reader parses it. One difference remains:
such a line whose body is not JSON was skipped by the reader with a warning;
here it is an entry without a message (``docs/deviations.md``).

The fast path applies to files whose first line is a session header of
version 3 or later; anything else (old versions to migrate, a missing header,
an empty file) is read by the reader.

Line positions: the rows of a chunk are counted when it is scanned; the byte
offset of a line is found when its entry is made, by scanning its chunk's
newlines once (``Lines``).

``openindex.py`` keeps a scan's per-line columns (:class:`ScanColumns`) across
daemon runs and rebuilds the same table from them with :func:`assemble` and
:func:`deferred_entry`, reading the lines from the file instead of a buffer.
"""

from __future__ import annotations

import contextlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from operator import itemgetter
from pathlib import Path
from typing import Any, Protocol

import attrs

from pi_sessiond.jsonio.jsontext import loads
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.migrate import CURRENT_VERSION, header_version
from pi_sessiond.store.reader import _LAZY_MAX_BYTES, _SKELETON, ReadResult, _read_line, _trim, parse_session_bytes
from pi_sessiond.store.table import EntryTable

_PLAIN = rb"[ !#-\[\]-~]"  # printable ASCII except '"' and '\'
_ROW = re.compile(
    rb'\n(?:(?<=(\})\n))?(?:\{"type":"message","id":"(' + _PLAIN + rb'+)","parentId":(?:null|"('
    + _PLAIN + rb'+)"),"timestamp":")?'
)
_CHUNK = 1 << 18  # bytes scanned per findall call (a line's offset costs one scan of its chunk)
_WINDOW = _LAZY_MAX_BYTES // 2  # a line of _LAZY_MAX_BYTES or more holds a whole newline-free window
_NULL_PARENT = {"": None}
_NEWLINE = re.compile(b"\n")
_START = re.Match.start


def read_session_file(path: Path) -> ReadResult:
    """Read ``path`` like ``reader.read_session_file``, deferring the standard message lines."""
    buf = path.read_bytes()
    return scan_session_bytes(buf) or parse_session_bytes(buf)


@attrs.frozen
class ScanColumns:
    """What a scan found per line after the header, for ``openindex.py`` to save (read-only).

    ``ids[j]`` / ``parents[j]`` are line ``j``'s (0 = the line after the header;
    meaningful only for lines not in ``slow``, ``""`` is a null parent), ``slow``
    the sorted lines the per-line reader read.
    """

    buf: bytes
    header_end: int
    ids: list[str]
    parents: list[str]
    slow: list[int]


def scan_session_bytes(
    buf: bytes, *, chunk: int = _CHUNK, columns: list[ScanColumns] | None = None
) -> ReadResult | None:
    """The file in ``buf`` read with deferred entries; ``None`` when the fast path does not apply.

    ``chunk``: bytes per ``findall`` call (tests make it tiny to cross chunk borders everywhere).
    ``columns``: when given, the scan's per-line columns are appended to it (``openindex.py`` saves them).
    """
    header_end = buf.find(b"\n")
    header = header_of(buf, header_end)
    if header is None:
        return None
    lines = Lines(buf, header_end, chunk)
    rows, lines.rows = lines.rows, []
    ends, id_bytes, parent_bytes = (list(map(itemgetter(k), rows)) for k in range(3))
    del rows  # a tuple per line: free them before the entries are built
    slow = sorted(_slow_lines(ends, id_bytes, lines))
    ids, parents = _decoded(id_bytes), _decoded(parent_bytes)
    del ends, id_bytes, parent_bytes
    table = EntryTable()
    line_count = 1 + len(ids) - (1 if buf.endswith(b"\n") else 0)
    result = ReadResult(header, table, [], len(buf), buf.endswith(b"\n"), header_line=1, line_count=line_count)
    maker = _Maker(lines, table)
    table.bind(maker)  # bound first: a skipped deep line may ask for the entry before it

    def read_slow(j: int) -> None:
        start, stop = lines.span(j)
        first, last = _trim(buf, start, stop)
        if first < last:
            _read_line(buf, first, last, j + 2, stop == len(buf), result)

    assemble(table, maker, ids, parents, slow, read_slow)
    if columns is not None:
        columns.append(ScanColumns(buf, header_end, ids, parents, slow))
    return result


def assemble(table: EntryTable, maker: Segments, ids: list[str], parents: list[str], slow: list[int],
             read_slow: Callable[[int], None]) -> None:
    """Fill ``table`` in file order: runs of deferred lines (``ids``/``parents``), ``read_slow(j)`` between them."""
    done = 0
    for j in [*slow, len(ids)]:
        if done < j:
            maker.segment(len(table), done)
            table.extend_deferred(ids[done:j], list(map(_NULL_PARENT.get, parents[done:j], parents[done:j])),
                                  "message")
        if j < len(ids):
            read_slow(j)
        done = j + 1


class Segments(Protocol):
    """A maker that learns where runs of deferred entries start (``_Maker``, ``indexedfile._FileMaker``)."""

    def segment(self, position: int, line: int) -> None: ...


def header_of(buf: bytes, end: int) -> dict[str, Any] | None:
    """The header on line 1 when it is a session header of a version needing no migration."""
    if end <= 0 or not buf.startswith(b'{"type":"session"'):
        return None
    try:
        header = loads(buf[:end])
    except ValueError:
        return None
    if not isinstance(header, dict) or header.get("type") != "session" or not isinstance(header.get("id"), str):
        return None
    return header if header_version(header) >= CURRENT_VERSION else None


def _slow_lines(ends: list[bytes], id_bytes: list[bytes], lines: Lines) -> set[int]:
    """Lines (0 = the line after the header) the per-line reader must read (see the module docstring)."""
    slow = set(_positions(id_bytes, b""))  # no standard prefix
    slow.update(k - 1 for k in _positions(ends, b"") if k > 0)  # line k-1 does not end in "}"
    slow.add(len(ends) - 1)  # the last line has no newline after it (torn), or is the empty one after the last
    slow.update(lines.long_lines())
    return slow


def _positions(items: list[bytes], value: bytes) -> Iterator[int]:
    """Where ``value`` is in ``items``, found by ``list.index`` (C speed: a handful in a normal file)."""
    at = -1
    while True:
        try:
            at = items.index(value, at + 1)
        except ValueError:
            return
        yield at


def _decoded(column: list[bytes]) -> list[str]:
    """The column as strings (printable ASCII by the row regex, so UTF-8 decodes it as it is)."""
    return list(map(bytes.decode, column))


class Lines:
    """Where the lines after the header are: chunks of the buffer and their rows."""

    def __init__(self, buf: bytes, header_end: int, chunk: int = _CHUNK) -> None:
        self.buf = buf
        self.starts: list[int] = []  # the newline each chunk starts at
        self.firsts: list[int] = []  # the line number (0-based) after that newline
        self.rows: list[tuple[bytes, bytes, bytes]] = []
        self._newlines: dict[int, list[int]] = {}
        findall, find, size = _ROW.findall, buf.find, len(buf)
        at = header_end
        while at >= 0:
            nxt = find(b"\n", at + chunk) if at + chunk < size else -1
            self.starts.append(at)
            self.firsts.append(len(self.rows))
            self.rows += findall(buf, at, nxt if nxt >= 0 else size)
            at = nxt

    def newlines(self, chunk: int) -> list[int]:
        """The positions of the newlines in ``chunk`` (scanned once, then kept)."""
        found = self._newlines.get(chunk)
        if found is None:
            found = list(map(_START, _NEWLINE.finditer(self.buf, self.starts[chunk], self.stop(chunk))))
            self._newlines[chunk] = found
        return found

    def stop(self, chunk: int) -> int:
        """Where ``chunk`` ends: the newline the next one starts at, or the end of the buffer."""
        return self.starts[chunk + 1] if chunk + 1 < len(self.starts) else len(self.buf)

    def span(self, line: int) -> tuple[int, int]:
        """``(start, stop)`` of a line, its newline excluded."""
        chunk = bisect_right(self.firsts, line) - 1
        start = self.newlines(chunk)[line - self.firsts[chunk]] + 1
        stop = self.buf.find(b"\n", start)
        return start, stop if stop >= 0 else len(self.buf)

    def line_at(self, offset: int) -> int:
        """The line holding byte ``offset`` (after the header's newline, not a newline itself)."""
        chunk = bisect_right(self.starts, offset) - 1
        return self.firsts[chunk] + bisect_left(self.newlines(chunk), offset) - 1

    def long_lines(self) -> list[int]:
        """The lines of ``_LAZY_MAX_BYTES`` or more (and no others)."""
        found: list[int] = []
        find, size = self.buf.find, len(self.buf)
        window = self.starts[0] + 1
        while window < size:
            if find(b"\n", window, window + _WINDOW) >= 0:
                window += _WINDOW
                continue
            line = self.line_at(window)  # a newline-free window: inside one long line
            start, stop = self.span(line)
            if stop - start >= _LAZY_MAX_BYTES:
                found.append(line)
            window = stop + 1  # on past that line (each line is measured once)
        return found


class _Maker:
    """Makes a deferred entry exactly as ``reader._read_line`` makes a lazy one."""

    __slots__ = ("_lines", "_lines_at", "_positions", "_table")

    def __init__(self, lines: Lines, table: EntryTable) -> None:
        self._lines = lines
        self._table = table
        self._positions: list[int] = []  # where each run of deferred entries starts in the table
        self._lines_at: list[int] = []  # and the line of its first entry

    def segment(self, position: int, line: int) -> None:
        """Deferred entries from table ``position`` on are the lines from ``line`` on, one each."""
        self._positions.append(position)
        self._lines_at.append(line)

    def __call__(self, i: int) -> Entry:
        k = bisect_right(self._positions, i) - 1
        line = self._lines_at[k] + i - self._positions[k]
        start, stop = self._lines.span(line)
        assert k >= 0, "a deferred entry before the first deferred run"
        return self._entry(i, line, start, stop)

    def fill(self, objs: list[Entry | None], first: int, stop: int) -> None:
        """Make every deferred entry at positions ``first`` .. ``stop - 1`` (a bulk :meth:`__call__`)."""
        positions, lines = self._positions, self._lines
        k = bisect_right(positions, first) - 1
        base, end, newlines = 0, 0, list[int]()  # the chunk being read: its first line, newlines and end
        for i in range(first, stop):
            if objs[i] is not None:
                continue
            while k + 1 < len(positions) and positions[k + 1] <= i:
                k += 1
            line = self._lines_at[k] + i - positions[k]
            if not base <= line < base + len(newlines):
                chunk = bisect_right(lines.firsts, line) - 1
                base, end, newlines = lines.firsts[chunk], lines.stop(chunk), lines.newlines(chunk)
            at = line - base
            objs[i] = self._entry(i, line, newlines[at] + 1, newlines[at + 1] if at + 1 < len(newlines) else end)

    def _entry(self, i: int, line: int, start: int, stop: int) -> Entry:
        return deferred_entry(self._table, i, line, self._lines.buf, start, stop)


def deferred_entry(table: EntryTable, i: int, line: int, buf: bytes, start: int, stop: int) -> Entry:
    """The entry at table position ``i``: line ``line`` (0 = after the header), ``buf[start:stop]``."""
    m = _SKELETON.match(buf, start, stop)
    if m is not None:
        timestamp, role = m.group(4, 5)
        with contextlib.suppress(UnicodeDecodeError):
            return Entry(table.ids[i], table.parents[i], "message", timestamp.decode(), None,
                         buf, start, stop, line + 2, role.decode() if role is not None else None)
    return _parsed(table, i, line, buf, start, stop)


def _parsed(table: EntryTable, i: int, line: int, buf: bytes, start: int, stop: int) -> Entry:
    """A line whose timestamp the skeleton does not read (an escape in it): parsed, as the reader does.

    If it is not JSON either, the reader would have skipped it; here it is
    already an entry: one without a message (``docs/deviations.md``).
    """
    entry_id, parent = table.ids[i], table.parents[i]
    try:
        data = loads(buf[start:stop])
    except ValueError:
        data = None
    if not isinstance(data, dict):
        return Entry(entry_id, parent, "message", "", None, buf, start, stop, line + 2)
    entry = Entry.from_data(data, line=line + 2)
    entry.id, entry.parent_id, entry.type = entry_id, parent, "message"  # as the table's columns say
    entry._src, entry._start, entry._end = buf, start, stop
    return entry

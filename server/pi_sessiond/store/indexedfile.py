"""The session file behind an indexed open: its entries made from its own lines when first used.

:func:`assemble_from_file` rebuilds a :class:`~pi_sessiond.store.reader.ReadResult`
from the index's columns: the lines the per-line reader must read are read at
once, every other entry is made later from its line (``os.pread`` per range,
through its own descriptor), and the bytes after the indexed prefix are read as
another writer's appends are folded in. An entry's line must still hold its id
when it is made; a file rewritten in place since the open fails loudly
(:class:`~pi_sessiond.store.guard.ChangedUnderneathError`), never lends its bytes
to another id.

``STATS`` counts the bytes read by opens, index hits and saves (``debug/stats``:
tests compare runs by it, never by time).
"""

from __future__ import annotations

import contextlib
import os
import re
from bisect import bisect_right

import orjson

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.reader import _SKELETON, ReadResult, _read_line, _trim, parse_session_bytes
from pi_sessiond.store.scan import _PLAIN, assemble, deferred_entry
from pi_sessiond.store.table import EntryTable

STATS = {"bytesRead": 0, "indexHits": 0, "indexSaves": 0}
_ESCAPED_STAMP = re.compile(  # a standard message prefix whose timestamp holds an escape (see assemble_from_file)
    rb'(?:^|\n)\{"type":"message","id":"' + _PLAIN + rb'+","parentId":(?:null|"' + _PLAIN
    + rb'+"),"timestamp":"[^"\n]*\\'
)


def pread(fd: int, size: int, offset: int) -> bytes:
    """``os.pread``, its bytes counted in :data:`STATS`."""
    data = os.pread(fd, size, offset)
    STATS["bytesRead"] += len(data)
    return data


def read_to_end(fd: int, offset: int) -> bytes:
    """Everything from ``offset`` to the end of the file."""
    parts = []
    while chunk := pread(fd, 1 << 20, offset):
        parts.append(chunk)
        offset += len(chunk)
    return b"".join(parts)


def assemble_from_file(fd: int, header: dict[str, object], ids: list[str], parents: list[str], slow: list[int],
                       newlines: list[int], size: int) -> ReadResult:
    """The result of an indexed open: entries made from ``fd``'s lines when first used, then what follows ``size``."""
    table = EntryTable()
    result = ReadResult(header, table, [], size, True, header_line=1, line_count=len(ids) + 1)
    maker = _FileMaker(os.dup(fd), newlines, table)  # its own descriptor: the caller closes ``fd``
    table.bind(maker)

    def read_slow(j: int) -> None:
        start, stop = newlines[j] + 1, newlines[j + 1]
        buf = pread(fd, stop - start, start)
        first, last = _trim(buf, 0, len(buf))
        if first < last:
            _read_line(buf, first, last, j + 2, False, result)

    assemble(table, maker, ids, parents, slow, read_slow)
    before = table[-1] if len(table) else None
    tail = read_to_end(fd, size)
    if tail:
        more = parse_session_bytes(tail, header=header, first_line=len(ids) + 2)
        if _ESCAPED_STAMP.search(tail) and any(w.message.startswith("malformed JSON") for w in more.warnings):
            # the one line the reader and the scan read differently (a broken body after an escaped
            # timestamp, ``scan.py``): rare enough to scan the whole file rather than differ from it
            raise ValueError("a malformed line after the indexed prefix")
        for entry in more.entries:
            table.append(entry)
        result.warnings += more.warnings
        result.kept += [(entry if entry is not None else before, raw) for entry, raw in more.kept]
        result.size += len(tail)
        result.ends_with_newline = tail.endswith(b"\n")
        result.line_count += more.line_count
    return result


class _FileMaker:
    """Makes deferred entries by reading their lines from the open file (``scan._Maker``'s contract)."""

    __slots__ = ("__weakref__", "_fd", "_lines_at", "_newlines", "_positions", "_table")

    def __init__(self, fd: int, newlines: list[int], table: EntryTable) -> None:
        self._fd = fd
        self._newlines = newlines
        self._table = table
        self._positions: list[int] = []
        self._lines_at: list[int] = []

    def __del__(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._fd)

    def segment(self, position: int, line: int) -> None:
        """Deferred entries from table ``position`` on are the lines from ``line`` on, one each."""
        self._positions.append(position)
        self._lines_at.append(line)

    def _line(self, i: int) -> int:
        k = bisect_right(self._positions, i) - 1
        return self._lines_at[k] + i - self._positions[k]

    def __call__(self, i: int) -> Entry:
        line = self._line(i)
        start, stop = self._newlines[line] + 1, self._newlines[line + 1]
        buf = pread(self._fd, stop - start, start)
        _same_line(self._table.ids[i], buf, 0, len(buf))
        return deferred_entry(self._table, i, line, buf, 0, len(buf))

    def fill(self, objs: list[Entry | None], first: int, stop: int) -> None:
        """Make every deferred entry at positions ``first`` .. ``stop - 1``, reading their range at once."""
        wanted = [i for i in range(first, stop) if objs[i] is None]
        if not wanted:
            return
        lines = [self._line(i) for i in wanted]
        nl = self._newlines
        base = nl[lines[0]] + 1
        buf = pread(self._fd, nl[lines[-1] + 1] - base, base)
        for i, line in zip(wanted, lines, strict=True):
            start, stop = nl[line] + 1 - base, nl[line + 1] - base
            _same_line(self._table.ids[i], buf, start, stop)
            objs[i] = deferred_entry(self._table, i, line, buf, start, stop)


def _same_line(entry_id: str, buf: bytes, start: int, stop: int) -> None:
    """Raise :class:`ChangedUnderneathError` unless ``buf[start:stop]`` is still the line of ``entry_id``.

    Entries are made from the file long after the open; a file another program
    rewrote in place since then must fail loudly, never lend its bytes to an id.
    """
    m = _SKELETON.match(buf, start, stop)
    if m is not None and m.group(2) == entry_id.encode():
        return
    if m is None and b'"id":' + orjson.dumps(entry_id) in buf[start:min(stop, start + 4096)]:
        return
    raise ChangedUnderneathError(f"the session file changed in place since it was opened (entry {entry_id}); reopen it")

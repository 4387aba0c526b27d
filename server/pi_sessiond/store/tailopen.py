"""A big session's first context from the end of its file: only what the context needs is parsed.

``pi/openSession`` + ``pi/getContext`` of a 100k-entry file must cost a tenth
of Pi's open, and reading the whole file is already half of that budget. But a
compacted leaf's context needs only the path from the leaf up to the newest
compaction's ``firstKeptEntryId``, and that is at the end of the file. So a
file of ``daemon.tailOpenBytes`` or more is first read from its end
(:func:`open_tail`), and the whole file is read later (``service/sessions/loading.py``).

What the tail gives exactly: the file's lines from some line boundary on are
read by the scanner the full open uses (``scan.py``), so they make the same
entries; the leaf is the last entry; walking up from it, each parent is looked
up among the tail's entries, and its last copy in the file is there too (the
tail is the file's end), so the walk is the end of the full path. When it
holds the newest compaction and its ``firstKeptEntryId`` (or the compaction
keeps nothing), every context entry is in it (``projection.context_entries``),
and so is the model (an assistant answer or a ``model_change`` after them).
Otherwise, when a ``compaction`` is written anywhere before the window (one
search), the window grows to hold the newest and then doubles, up to half the
file; else, or past half, :func:`open_tail` answers ``None`` and the caller
opens the file in full.

What it speculates: the thinking level, when no ``thinking_level_change`` is
on that part of the path. It is then the newest ``thinking_level_change`` line
before the tail (one search over the rest of the file, no parse), which is the
path's when the history above the tail is one branch (every Pi session that
was never navigated back past that change). A file where that line is on an
abandoned branch, or whose type is spelled with escapes, gets the wrong level
until the full read, which compares and tells the client (``pi/sessionChanged``
with reason ``loaded``). A hit that is not at a line start (another key order,
or the text inside a message) is not guessed at: the file is opened in full.

The file is read with ``pread`` only (the search a chunk at a time into one
buffer): a mapping would turn a file truncated meanwhile into ``SIGBUS``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.jsonio.jsontext import loads
from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.pathcheck import check_session_file
from pi_sessiond.store.scan import header_of, scan_session_bytes
from pi_sessiond.store.table import PathView
from pi_sessiond.store.tree import SessionTree

DEFAULT_TAIL_OPEN_BYTES = 32 << 20
"""``daemon.tailOpenBytes``: files at least this large are opened tail-first."""
FIRST_WINDOW = 4 << 20  # bytes read from the end at first (at most a quarter of the file)
_HEADER_PROBE = 1 << 16
_THINKING = b'"type":"thinking_level_change"'
_COMPACTION = b'"type":"compaction"'
_SEARCH_CHUNK = 1 << 20
STATS = {"tailBytesRead": 0, "tailOpens": 0, "loaded": 0}  # debug/stats; "loaded" counts service/sessions/loading.py


@attrs.frozen
class TailRead:
    """The first context of a file read from its end.

    ``tree`` holds the tail's entries only (never written; its leaf's context
    is the file's, see the module docstring); ``size`` is the file's size as
    read. ``speculated``: no ``thinking_level_change`` is on the tail's part of
    the path, and ``thinking`` is the level guessed from before the tail.
    """

    header: JsonDict
    tree: SessionTree
    size: int
    speculated: bool = False
    thinking: Any = None

    def context(self, context: SessionContext) -> SessionContext:
        """``context`` (the tail tree's leaf context) with the guessed thinking level."""
        return attrs.evolve(context, thinking_level=self.thinking) if self.speculated else context


def open_tail(path: Path, max_bytes: int, min_bytes: int = DEFAULT_TAIL_OPEN_BYTES) -> TailRead | None:
    """The leaf's context from the end of ``path``; ``None`` when the file must be opened in full.

    ``None`` for files under ``min_bytes``, without a current (v3) header on
    line 1, and whenever the module docstring's conditions do not hold. Raises
    what :func:`~pi_sessiond.store.pathcheck.check_session_file` raises, and ``OSError``.
    """
    st = check_session_file(path, max_bytes)
    if min_bytes <= 0 or st.st_size < min_bytes:
        return None
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _read(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _read(fd: int, size: int) -> TailRead | None:
    head = _pread(fd, _HEADER_PROBE, 0)
    header_end = head.find(b"\n")
    header = header_of(head, header_end)
    if header is None:
        return None
    first = window = min(FIRST_WINDOW, size // 4)
    searched = False
    while True:
        tree = _window_tree(fd, size, head[: header_end + 1], size - window)
        path = tree.path_view() if tree is not None else None
        missing = _missing(path) if path is not None else "entries"
        if missing is None and tree is not None and path is not None:
            break
        if window >= size // 2:
            return None
        if missing == "compaction" and not searched:  # before reading more: is one written further back?
            searched = True
            newest = _newest(fd, _COMPACTION, header_end + 1, size - window)
            if newest < 0:
                return None  # none anywhere before: this leaf's context is its whole path
            window = max(2 * window, size - newest + first // 4)
        else:
            window *= 2
        window = min(window, size // 2)
    STATS["tailOpens"] += 1
    if "thinking_level_change" in path.types:
        return TailRead(header, tree, size)
    thinking = _thinking_before(fd, header_end + 1, size - window)
    return TailRead(header, tree, size, True, thinking) if thinking is not _UNKNOWN else None


def _window_tree(fd: int, size: int, header_line: bytes, start: int) -> SessionTree | None:
    """The entries from the first line boundary after ``start`` to the end; ``None`` when there are none."""
    data = _pread(fd, size - start, start)
    cut = data.find(b"\n")
    if cut < 0:
        return None
    result = scan_session_bytes(header_line + data[cut + 1 :])
    return SessionTree(result.entries) if result is not None and result.entries else None


def _missing(path: PathView) -> str | None:
    """What the leaf's context needs that the path lacks: ``"compaction"``, ``"kept range"``, ``"model"``, or ``None``.

    Needed: the newest compaction, its kept range (``firstKeptEntryId``, unless
    it keeps nothing) and an entry that sets the model.
    """
    types = path.types
    try:
        at = len(types) - 1 - types[::-1].index("compaction")
    except ValueError:
        return "compaction"
    compaction = path[at]
    first_kept = compaction.data.get("firstKeptEntryId")
    if isinstance(first_kept, str) and first_kept != compaction.id and first_kept not in path.ids[:at]:
        return "kept range"  # it may start above the window
    if not any(kind == "model_change" or (kind == "message" and _is_assistant(path[i]))
               for i, kind in enumerate(types)):
        return "model"
    return None


def _is_assistant(entry: Entry) -> bool:
    return entry.role == "assistant" and entry.message is not None


_UNKNOWN: Any = object()


def _thinking_before(fd: int, lo: int, hi: int) -> Any:
    """The level of the newest ``thinking_level_change`` line in ``[lo, hi)``; ``"off"`` if there is none.

    As ``projection.path_settings``: the line's ``thinkingLevel`` as it is
    (``None`` when it has none). :data:`_UNKNOWN` when the newest hit is not the
    start of a line of that type.
    """
    hit = _newest(fd, _THINKING, lo, hi)
    if hit < 0:
        return "off"
    if hit - 2 < lo - 1 or os.pread(fd, 2, hit - 2) != b"\n{":
        return _UNKNOWN
    line = _line_from(fd, hit - 1)
    try:
        data = loads(line)
    except ValueError:
        return _UNKNOWN
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        return _UNKNOWN
    return data.get("thinkingLevel")


def _newest(fd: int, needle: bytes, lo: int, hi: int) -> int:
    """Where the last ``needle`` wholly inside ``[lo, hi)`` of the file starts, or -1.

    Read a chunk at a time into one buffer (``pread``: never a mapping, which a
    file truncated meanwhile would turn into ``SIGBUS``), searched forward (CPython's
    forward search is faster than ``rfind``); chunks overlap by the needle's length.
    """
    buf = bytearray(_SEARCH_CHUNK)
    view = memoryview(buf)
    found, at = -1, lo
    while at < hi:
        n = os.preadv(fd, [view[: min(_SEARCH_CHUNK, hi - at)]], at)
        if n <= 0:
            break
        i = buf.find(needle, 0, n)
        while i >= 0:
            found, i = at + i, buf.find(needle, i + 1, n)
        if at + n >= hi or n < len(needle):
            break
        at += n - len(needle) + 1
    return found


def _line_from(fd: int, start: int) -> bytes:
    """The line starting at byte ``start``, without its newline."""
    parts: list[bytes] = []
    while chunk := os.pread(fd, 1 << 16, start):
        end = chunk.find(b"\n")
        if end >= 0:
            parts.append(chunk[:end])
            break
        parts.append(chunk)
        start += len(chunk)
    return b"".join(parts)


def _pread(fd: int, size: int, offset: int) -> bytes:
    data = os.pread(fd, size, offset)
    STATS["tailBytesRead"] += len(data)
    return data

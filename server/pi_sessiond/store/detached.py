"""Reading a session file a block at a time, for a process that only appends to it.

:func:`read_in_blocks` gives the entries, warnings and line numbers
``reader.parse_session_bytes`` gives for the whole file (it reads each block with
it, as a continuation of the lines before), but no buffer of the whole file is
kept: each entry keeps its block only until its line is parsed
(``entry.OwnLineEntry``), so a block is freed once all its lines are. A process
that parses every entry of a path (a compaction of a long history) never holds
the file's bytes and its parsed entries together; one that parses only the newest
part holds the older blocks unparsed, as a lazy open holds the whole file.

Without their lines the entries cannot be copied byte for byte by a rewrite, so
only a file whose next write is an append is read so: one that starts with a
header of the current version. The daemon keeps reading lazily from one buffer
(``Session.open``); this is for one-shot commands (``cli/local.py``).
"""

from __future__ import annotations

import os
from pathlib import Path

from pi_sessiond.store.entry import OwnLineEntry
from pi_sessiond.store.migrate import CURRENT_VERSION, header_version
from pi_sessiond.store.reader import ReadResult, parse_session_bytes

BLOCK_BYTES = 4 << 20
"""How much of the file is held at a time (plus the line that straddles a block's end)."""


def read_in_blocks(path: Path, block_bytes: int = BLOCK_BYTES) -> tuple[ReadResult, os.stat_result] | None:
    """``path`` read a block at a time into entries that let their block go once parsed; ``None`` for a
    file that does not start with a header of the current version (read it whole)."""
    _blocks_return_to_the_system()
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        out: ReadResult | None = None
        rest = b""
        while True:
            block = fh.read(block_bytes)
            data = rest + block
            cut = data.rfind(b"\n") + 1 if block else len(data)
            part, rest = data[:cut], data[cut:]
            if part and out is None:
                out = parse_session_bytes(part)
                if out.header_line != 1 or header_version(out.header) < CURRENT_VERSION:
                    return None
                _own_lines(out)
            elif part and out is not None:
                _extend(out, parse_session_bytes(part, header=out.header, first_line=out.line_count + 1))
            if not block:
                return (out, st) if out is not None else None


def _extend(out: ReadResult, more: ReadResult) -> None:
    """Add the lines of the next block to ``out``; a line kept before the block's first entry follows
    the last entry of the blocks before."""
    entries = out.entries
    assert isinstance(entries, list)  # the reader makes lists
    _own_lines(more)
    before = entries[-1] if entries else None
    entries.extend(more.entries)
    out.warnings += more.warnings
    out.kept += [(after if after is not None else before, line) for after, line in more.kept]
    out.size += more.size
    out.line_count += more.line_count
    out.ends_with_newline = more.ends_with_newline


def _own_lines(result: ReadResult) -> None:
    """Let ``result``'s entries let go of their block once parsed."""
    for entry in result.entries:
        OwnLineEntry.owning(entry)


def _blocks_return_to_the_system() -> None:
    """Keep glibc's malloc from moving its mmap threshold up to the block size once a block is freed.

    Left alone, glibc raises the threshold to the size of every mapped chunk freed, so the next blocks
    land in the heap, where a freed block between live objects is never given back to the system: the
    blocks freed as their lines are parsed would stay in the process's memory. A fixed threshold (its
    default) keeps every block mapped on its own. Nothing is done where glibc's ``mallopt`` is missing.
    """
    global _THRESHOLD_FIXED
    if _THRESHOLD_FIXED:
        return
    _THRESHOLD_FIXED = True
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    except (OSError, AttributeError):
        pass


_M_MMAP_THRESHOLD = -3
_THRESHOLD_FIXED = False

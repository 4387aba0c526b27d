"""An index of a large session file kept across daemon runs, so a reopen reads only what it needs.

An addition of ours, not Pi's (setting ``daemon.openIndex``). When a v3 file of at
least ``MIN_LINES`` lines is opened by a full scan (``scan.py``), the scan's
columns (per line: id, parent, the byte position of its newline; the lines the
per-line reader read) are saved by :func:`save` — called off the request path —
to ``$XDG_CACHE_HOME/pi-sessiond/open-index/<sha256 of the real path>.idx``
(folder 0700, file 0600, written to a temp file and renamed; never beside the
session file, which is never written).

:func:`read_session` uses an index only when it provably describes the file's
prefix of ``size`` bytes (the bytes up to the last newline at save time): same
device and inode, the file at least that long, the prefix's first 4 KiB and last
64 KiB hash-equal to the saved hashes (just those bytes are read; at the very
size it was saved at, the same mtime too), the format version and the index's
own SHA-256 right, the index a regular 0600 file of ours in a 0700 folder of
ours, not a symlink, and its columns consistent, with the newlines, ids and
parents they place in those two windows found there. Then only
the header, the lines the per-line reader must read, the bytes after the prefix
(read by ``reader.parse_session_bytes`` exactly as another writer's appends are
folded in; a malformed line among them sends the open to the full scan, which may
read it otherwise) and, later, the lines an entry is made from (``os.pread`` per range)
are read. Anything else returns ``None`` and the caller scans the whole file;
the :class:`~pi_sessiond.store.reader.ReadResult` is the same either way
(``tests/unit/store/test_openindex.py``). The cache is capped at
``MAX_CACHE_BYTES`` (oldest files removed first).

``STATS`` counts the bytes read by opens (``debug/stats``: tests compare runs by
it, never by time). The entries made from the file later: ``indexedfile.py``.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import stat
import tempfile
from array import array
from bisect import bisect_left
from operator import lt
from pathlib import Path

import orjson

from pi_sessiond.store import layout
from pi_sessiond.store.indexedfile import STATS as STATS  # the counters of every open, read here by debug/stats
from pi_sessiond.store.indexedfile import assemble_from_file, pread
from pi_sessiond.store.reader import ReadResult, parse_session_bytes
from pi_sessiond.store.scan import ScanColumns, header_of, scan_session_bytes

log = logging.getLogger(__name__)

FORMAT = 1
MIN_LINES = 20_000
MAX_CACHE_BYTES = 256 * 1024 * 1024
HEAD, TAIL = 4096, 65536
_MAGIC = b"pi-sessiond open-index\n"
_COLUMN = re.compile(rb"[ !#-\[\]-~\n]*")  # what ids and parents may hold (scan._PLAIN) and the separator
_NEWLINE = re.compile(b"\n")
_START = re.Match.start
SAVE_DELAY = 3.0  # seconds between an open and saving its index: the first requests on it go first


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/pi-sessiond/open-index`` (``~/.cache`` when unset or not absolute)."""
    return layout.cache_root() / "open-index"


def index_path(directory: Path, real_path: Path) -> Path:
    """The index file of ``real_path`` (a resolved path) in ``directory``."""
    return directory / (hashlib.sha256(os.fsencode(real_path)).hexdigest()[:40] + ".idx")


def read_session(path: Path, directory: Path | None) -> tuple[ReadResult, ScanColumns | None, os.stat_result]:
    """Read ``path``: through its index in ``directory`` when one applies, else in full.

    Returns the result, the scan's columns when a full scan of a file worth an
    index ran (hand them to :func:`save`, off the request path; ``None``
    otherwise) and the stat of the file as read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if directory is not None:
            result = _try_index(fd, st, path, directory)
            if result is not None:
                STATS["indexHits"] += 1
                return result, None, st
        with open(fd, "rb", closefd=False) as fh:
            buf = fh.read()
        STATS["bytesRead"] += len(buf)
    finally:
        if fd >= 0:
            os.close(fd)
    columns: list[ScanColumns] = []
    scanned = scan_session_bytes(buf, columns=columns)
    if scanned is None:
        return parse_session_bytes(buf), None, st
    worth = directory is not None and columns and len(columns[0].ids) > MIN_LINES
    return scanned, columns[0] if worth else None, st


# ------------------------------------------------------------------ saving
def save(path: Path, st: os.stat_result, columns: ScanColumns, directory: Path) -> bool:
    """Save the index of ``path`` (its bytes and stat as scanned) to ``directory``; whether it was written.

    Never raises for an I/O problem (logged at debug level); never touches ``path``.
    """
    try:
        if not _own_dir(directory, create=True):
            return False
        body = _encode(path, st, columns)
        if body is None:
            return False
        blob = _MAGIC + hashlib.sha256(body).digest() + body
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".idx")  # 0600, O_EXCL
        try:
            with open(fd, "wb") as fh:
                fh.write(blob)
            os.replace(tmp, index_path(directory, path))
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        STATS["indexSaves"] += 1
        _trim_cache(directory, MAX_CACHE_BYTES)
        return True
    except (OSError, ValueError) as exc:
        log.debug("open index of %s not saved: %s", path, exc)
        return False


def _encode(path: Path, st: os.stat_result, c: ScanColumns) -> bytes | None:
    size = c.buf.rfind(b"\n") + 1
    lines = len(c.ids) - 1  # the last row is the line after the last newline (empty or torn): not indexed
    newlines = array("q", map(_START, _NEWLINE.finditer(c.buf, 0, size)))
    if lines < 1 or newlines[0] != c.header_end or len(newlines) != lines + 1:
        return None
    ids = "\n".join(c.ids[:lines]).encode()
    parents = "\n".join(c.parents[:lines]).encode()
    slow = array("q", [j for j in c.slow if j < lines])
    meta = {
        "format": FORMAT, "path": os.fsdecode(path), "dev": st.st_dev, "ino": st.st_ino, "size": size,
        "lines": lines, "headerEnd": c.header_end, "head": _hash(c.buf[: min(HEAD, size)]),
        "tail": _hash(c.buf[max(0, size - TAIL) : size]), "ids": len(ids), "parents": len(parents),
        "slow": len(slow), "itemsize": newlines.itemsize, "statSize": st.st_size, "mtime": st.st_mtime_ns,
    }
    return orjson.dumps(meta) + b"\n" + ids + parents + slow.tobytes() + newlines.tobytes()


def _hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _trim_cache(directory: Path, cap: int) -> None:
    """Remove the oldest index files until the folder's ``.idx`` files total at most ``cap`` bytes."""
    found = []
    for entry in os.scandir(directory):
        if entry.name.endswith(".idx") and entry.is_file(follow_symlinks=False):
            st = entry.stat(follow_symlinks=False)
            found.append((st.st_mtime_ns, st.st_size, entry.path))
    total = sum(size for _, size, _ in found)
    for _, size, name in sorted(found):
        if total <= cap:
            break
        with contextlib.suppress(OSError):
            os.unlink(name)
        total -= size


def _own_dir(directory: Path, *, create: bool) -> bool:
    """Whether ``directory`` is a 0700 folder of ours (``layout.private_dir``); logged when it is not."""
    ok = layout.private_dir(directory, create=create)
    if not ok:
        log.debug("open index folder %s is not a 0700 folder of ours: not used", directory)
    return ok


# ----------------------------------------------------------------- loading
def _try_index(fd: int, st: os.stat_result, path: Path, directory: Path) -> ReadResult | None:
    try:
        meta, body = _load(index_path(directory, path), path, st)
        if meta is None:
            return None
        return _rebuild(fd, meta, body)
    except (OSError, ValueError, KeyError, TypeError, IndexError, OverflowError) as exc:
        log.debug("open index of %s not used: %s", path, exc)
        return None


def _load(where: Path, path: Path, st: os.stat_result) -> tuple[dict[str, int | str] | None, bytes]:
    """The index's metadata and body when it is ours, whole and about this file; else ``(None, b"")``."""
    if not _own_dir(where.parent, create=False):
        return None, b""
    try:
        ifd = os.open(where, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None, b""
    with open(ifd, "rb") as fh:
        ist = os.fstat(ifd)
        if not stat.S_ISREG(ist.st_mode) or ist.st_uid != os.geteuid() or ist.st_mode & 0o077:
            raise ValueError("not a 0600 regular file of ours")
        if ist.st_size > MAX_CACHE_BYTES:
            raise ValueError("larger than the cache")
        blob = fh.read()
    head = len(_MAGIC) + 32
    if not blob.startswith(_MAGIC) or hashlib.sha256(blob[head:]).digest() != blob[len(_MAGIC) : head]:
        raise ValueError("bad magic or checksum")
    end = blob.index(b"\n", head)
    meta = orjson.loads(blob[head:end])
    if meta.get("format") != FORMAT or meta.get("path") != os.fsdecode(path):
        raise ValueError("another format or another file")
    if (meta["dev"], meta["ino"]) != (st.st_dev, st.st_ino) or st.st_size < meta["size"]:
        raise ValueError("the file was replaced or shortened")
    if st.st_size == meta["statSize"] and st.st_mtime_ns != meta["mtime"]:
        raise ValueError("the file was rewritten in place")
    return meta, blob[end + 1 :]


def _rebuild(fd: int, meta: dict[str, int | str], body: bytes) -> ReadResult | None:
    size, lines, header_end = int(meta["size"]), int(meta["lines"]), int(meta["headerEnd"])
    first = pread(fd, min(HEAD, size), 0)
    if _hash(first) != meta["head"]:
        raise ValueError("the file's first bytes differ")
    last = pread(fd, size - max(0, size - TAIL), max(0, size - TAIL))
    if _hash(last) != meta["tail"]:
        raise ValueError("the file's prefix ends otherwise")
    n_ids, n_parents, n_slow = int(meta["ids"]), int(meta["parents"]), int(meta["slow"])
    if meta["itemsize"] != array("q").itemsize or not _COLUMN.fullmatch(body, 0, n_ids + n_parents):
        raise ValueError("bad columns")
    ids = body[:n_ids].decode().split("\n")
    parents = body[n_ids : n_ids + n_parents].decode().split("\n")
    slow = array("q")
    slow.frombytes(body[n_ids + n_parents : n_ids + n_parents + 8 * n_slow])
    packed = array("q")
    packed.frombytes(body[n_ids + n_parents + 8 * n_slow :])
    newlines = packed.tolist()  # a list: checked and indexed faster than the array
    _check(ids, parents, slow, newlines, lines, size, header_end)
    slow_set = set(slow)
    _agrees(first, 0, ids, parents, slow_set, newlines)
    _agrees(last, size - len(last), ids, parents, slow_set, newlines)
    head = pread(fd, header_end + 1, 0)
    header = header_of(head, header_end)
    if header is None or len(head) != header_end + 1:
        raise ValueError("the header changed")
    return assemble_from_file(fd, header, ids, parents, list(slow), newlines, size)


def _agrees(window: bytes, offset: int, ids: list[str], parents: list[str], slow: set[int],
            newlines: list[int]) -> None:
    """The columns say what the bytes read (``window`` at ``offset``) say: newlines, ids and parents there."""
    found = [offset + m.start() for m in _NEWLINE.finditer(window)]
    low = bisect_left(newlines, offset)
    if newlines[low : bisect_left(newlines, offset + len(window))] != found:
        raise ValueError("the newlines differ from the file's")
    for j in range(max(low - 1, 0), len(ids)):  # the lines starting in the window (line j starts after newline j)
        start = newlines[j] + 1
        if start >= offset + len(window):
            break
        if j in slow or start < offset:
            continue
        parent = b"null" if not parents[j] else b'"' + parents[j].encode() + b'"'
        prefix = b'{"type":"message","id":"' + ids[j].encode() + b'","parentId":' + parent + b',"timestamp":"'
        if not window.startswith(prefix[: offset + len(window) - start], start - offset):
            raise ValueError("an id or parent differs from the file's")


def _check(ids: list[str], parents: list[str], slow: array[int], newlines: list[int], lines: int, size: int,
           header_end: int) -> None:
    if len(ids) != lines or len(parents) != lines or len(newlines) != lines + 1:
        raise ValueError("column lengths differ")
    if newlines[0] != header_end or newlines[-1] != size - 1 or not all(map(lt, newlines, newlines[1:])):
        raise ValueError("newlines out of order")
    if slow and (slow[0] < 0 or slow[-1] >= lines or not all(map(lt, slow, slow[1:]))):
        raise ValueError("slow lines out of order")

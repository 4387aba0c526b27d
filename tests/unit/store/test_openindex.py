"""The open index (``store/openindex.py``): a reopen through it reads the same as a full scan, or falls back.

Each file is read by ``openindex.read_session`` with the index (after a first
read saved it) and compared with a full scan of the same bytes (the
``test_scan`` signature: entries, warnings, kept lines, counts). Bytes read are
counted by ``openindex.STATS``. ``MIN_LINES`` is lowered so small files get an index.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from tests.unit.store.helpers import HEADER, assistant, compaction, user
from tests.unit.store.test_scan import line, signature

from pi_sessiond.store import openindex
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.reader import parse_session_bytes
from pi_sessiond.store.scan import scan_session_bytes
from pi_sessiond.store.session import Session

LINES = 3000


@pytest.fixture(autouse=True)
def small_files_get_an_index(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(openindex, "MIN_LINES", 100)


def rows(count: int, prefix: str = "e", pad: int = 40) -> list[bytes]:
    out, parent = [], None
    for k in range(count):
        eid = f"{prefix}{k}"
        make = user if k % 2 == 0 else assistant
        out.append(line(make(eid, parent, f"text {k} " + "x" * pad)))
        if k == count // 2:
            out.append(line({"type": "label", "id": f"l{k}", "parentId": eid, "timestamp": "t",
                             "targetId": eid, "label": "mark"}))
            out.append(b"not json")
            out.append(line(compaction(f"c{k}", f"l{k}", f"{prefix}{k - 10}")))
            eid = f"c{k}"
        parent = eid
    return out


def write_session(path: Path, body: list[bytes], end: bytes = b"\n") -> Path:
    path.write_bytes(b"\n".join([line(HEADER), *body]) + end)
    return path


def reference(path: Path) -> tuple[Any, ...]:
    buf = path.read_bytes()
    result = scan_session_bytes(buf)
    return signature(result if result is not None else parse_session_bytes(buf))


def indexed(path: Path, cache: Path) -> tuple[Any, ...]:
    """Read ``path`` with the cache (saving an index when the read was a full scan); its signature."""
    result, columns, st = openindex.read_session(path, cache)
    if columns is not None:
        assert openindex.save(path, st, columns, cache)
    return signature(result)


def hits() -> int:
    return openindex.STATS["indexHits"]


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "pi-sessiond" / "open-index"


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    return write_session(tmp_path / "s.jsonl", rows(LINES))


def test_a_second_read_uses_the_index_reads_less_and_equals_a_full_scan(session_file: Path, cache: Path) -> None:
    first = indexed(session_file, cache)
    assert first == reference(session_file)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    (saved,) = cache.iterdir()
    assert oct(saved.stat().st_mode & 0o777) == "0o600"
    before_hits, before_bytes = hits(), openindex.STATS["bytesRead"]
    result, columns, _ = openindex.read_session(session_file, cache)
    assert hits() == before_hits + 1 and columns is None
    assert openindex.STATS["bytesRead"] - before_bytes < session_file.stat().st_size // 4
    assert signature(result) == reference(session_file)  # makes every entry: reads their lines


def test_the_last_entries_alone_are_read_through_the_index(session_file: Path, cache: Path) -> None:
    indexed(session_file, cache)
    result, _, _ = openindex.read_session(session_file, cache)
    before = openindex.STATS["bytesRead"]
    tail = result.entries[-50:]
    assert [e.id for e in tail] == [e.id for e in parse_session_bytes(session_file.read_bytes()).entries[-50:]]
    assert openindex.STATS["bytesRead"] - before < session_file.stat().st_size // 20


def test_lines_another_writer_appended_are_folded_in_exactly(session_file: Path, cache: Path) -> None:
    indexed(session_file, cache)
    with open(session_file, "ab") as fh:
        fh.write(line(user("new1", f"e{LINES - 1}", "appended")) + b"\nbroken\n")
        fh.write(line(user("new2", "new1", "torn"))[:30])  # a torn last line
    before = hits()
    assert indexed(session_file, cache) == reference(session_file)
    assert hits() == before + 1


def test_a_broken_line_appended_after_the_index_reads_as_the_full_scan_reads_it(session_file: Path,
                                                                              cache: Path) -> None:
    indexed(session_file, cache)
    escaped = (b'{"type":"message","id":"b1","parentId":"e1","timestamp":"2026\\u002d01",'
               b'"message":{"role":"user",broken}')  # the scan makes it an entry, the reader skips it
    with open(session_file, "ab") as fh:
        fh.write(escaped + b"\n")
    before = hits()
    assert indexed(session_file, cache) == reference(session_file)
    assert hits() == before  # the full scan read it


def test_a_file_saved_with_a_torn_last_line_then_completed(tmp_path: Path, cache: Path) -> None:
    path = write_session(tmp_path / "s.jsonl", rows(LINES), end=b"\n" + line(user("t", "e1", "half"))[:20])
    assert indexed(path, cache) == reference(path)
    with open(path, "ab") as fh:
        fh.write(line(user("t", "e1", "half"))[20:] + b"\n")
    before = hits()
    assert indexed(path, cache) == reference(path)
    assert hits() == before + 1


@pytest.mark.parametrize("where", ["head", "middle", "tail"])
def test_a_rewrite_in_place_with_the_same_size_falls_back(session_file: Path, cache: Path, where: str) -> None:
    indexed(session_file, cache)
    buf = bytearray(session_file.read_bytes())
    at = {"head": 200, "middle": len(buf) // 2, "tail": len(buf) - 600}[where]
    at = buf.index(b'"text ', at) + 1
    buf[at : at + 4] = b"TEXT"
    with open(session_file, "r+b") as fh:  # same inode, same size
        fh.write(bytes(buf))
    os.utime(session_file, ns=(1, 1))  # a new modification time, as any write gives
    before = hits()
    assert indexed(session_file, cache) == reference(session_file)
    assert hits() == before


def test_a_replaced_file_and_a_shortened_file_fall_back(session_file: Path, cache: Path) -> None:
    indexed(session_file, cache)
    data = session_file.read_bytes()
    other = session_file.with_suffix(".new")
    other.write_bytes(data)
    os.replace(other, session_file)  # same bytes, another inode (a rewrite, a migration)
    before = hits()
    assert indexed(session_file, cache) == reference(session_file)
    assert hits() == before
    with open(session_file, "r+b") as fh:
        fh.truncate(len(data) // 2)
    assert indexed(session_file, cache) == reference(session_file)
    assert hits() == before


@pytest.mark.parametrize("damage", ["truncated", "flipped", "foreign-mode", "foreign-owner", "empty",
                                    "garbage-columns-head", "garbage-columns-tail"])
def test_a_damaged_or_loose_index_is_not_used(session_file: Path, cache: Path, damage: str) -> None:
    indexed(session_file, cache)
    (saved,) = cache.iterdir()
    blob = bytearray(saved.read_bytes())
    if damage == "truncated":
        saved.write_bytes(blob[: len(blob) // 2])
    elif damage == "flipped":
        blob[-10] ^= 1
        saved.write_bytes(blob)
    elif damage == "foreign-mode":
        saved.chmod(0o644)
    elif damage == "foreign-owner":
        if os.geteuid() != 0:
            pytest.skip("giving a file away needs root")
        os.chown(saved, 65534, 65534)
    elif damage == "empty":
        saved.write_bytes(b"")
    else:  # a right checksum over columns that do not describe the file where it was read
        head = len(openindex._MAGIC) + 32
        which = b"\ne1\n" if damage == "garbage-columns-head" else f"\ne{LINES - 3}\n".encode()
        body = bytes(blob[head:]).replace(which, b"\n" + b"Z" * (len(which) - 2) + b"\n", 1)  # same length
        assert body != bytes(blob[head:])
        saved.write_bytes(openindex._MAGIC + hashlib.sha256(body).digest() + body)
    before = hits()
    result, _columns, _ = openindex.read_session(session_file, cache)
    assert hits() == before
    assert signature(result) == reference(session_file)


def test_a_symlink_in_the_cache_is_never_followed(session_file: Path, cache: Path, tmp_path: Path) -> None:
    indexed(session_file, cache)
    (saved,) = cache.iterdir()
    target = tmp_path / "elsewhere.idx"
    os.replace(saved, target)
    saved.symlink_to(target)
    before = hits()
    result, columns, st = openindex.read_session(session_file, cache)
    assert hits() == before and signature(result) == reference(session_file)
    assert columns is not None and openindex.save(session_file, st, columns, cache)
    assert not saved.is_symlink() and target.exists()  # the link was replaced, its target left alone


def test_a_cache_folder_that_is_a_symlink_or_open_to_others_is_not_used(session_file: Path, tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    _result, columns, st = openindex.read_session(session_file, link)
    assert columns is not None and not openindex.save(session_file, st, columns, link)
    assert list(real.iterdir()) == []
    loose = tmp_path / "loose"
    loose.mkdir()
    loose.chmod(0o755)
    assert not openindex.save(session_file, st, columns, loose)


def test_the_cache_is_capped_oldest_first(tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [write_session(tmp_path / f"s{k}.jsonl", rows(300, prefix=f"p{k}-")) for k in range(3)]
    for k, path in enumerate(paths):
        indexed(path, cache)
        for saved in cache.iterdir():
            os.utime(saved, ns=(k, k) if saved.stat().st_mtime_ns > 10 else (saved.stat().st_mtime_ns,) * 2)
    sizes = sorted(p.stat().st_size for p in cache.iterdir())
    openindex._trim_cache(cache, sum(sizes[-2:]))
    assert len(list(cache.iterdir())) == 2
    assert not openindex.index_path(cache, paths[0]).exists()


def test_small_and_old_format_files_get_no_index(tmp_path: Path, cache: Path) -> None:
    small = write_session(tmp_path / "small.jsonl", rows(10))
    assert openindex.read_session(small, cache)[1] is None
    old = tmp_path / "old.jsonl"
    old.write_bytes(line({**HEADER, "version": 2}) + b"\n" + b"\n".join(rows(300)) + b"\n")
    assert openindex.read_session(old, cache)[1] is None


def test_a_session_opened_twice_through_the_index_has_the_same_context(session_file: Path, cache: Path) -> None:
    first = Session.open(session_file, index_dir=cache)
    assert first.pending_index is not None and first.save_index()
    before = hits()
    second = Session.open(session_file, index_dir=cache)
    assert hits() == before + 1 and second.pending_index is None
    plain = Session.open(session_file)
    assert list(second.context().messages) == list(plain.context().messages)
    assert second.tree.labels == plain.tree.labels
    second.path = None  # appends stay in memory
    second.append([{"type": "message", "message": {"role": "user", "content": "more", "timestamp": 1}}])
    assert second.context().messages[-1]["content"] == "more"


def test_a_file_rewritten_in_place_after_a_warm_open_fails_loudly_never_lends_its_bytes(session_file: Path,
                                                                                       cache: Path) -> None:
    indexed(session_file, cache)
    result, _, _ = openindex.read_session(session_file, cache)
    assert openindex.STATS["indexHits"] > 0
    # Another program rewrites the file in place (same inode), every entry under another id.
    other = session_file.read_bytes().replace(b'"id":"e', b'"id":"f')
    with session_file.open("r+b") as out:
        out.write(other)
    with pytest.raises(ChangedUnderneathError, match="changed in place"):
        list(result.entries)  # made from the file now
    with pytest.raises(ChangedUnderneathError):
        result.entries[5]

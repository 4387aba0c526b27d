"""``store/detached.py``: a file read a block at a time reads as the whole-file reader reads it.

The reference is ``reader.parse_session_bytes`` of the whole file; the block
reader must give the same entries (each letting its line go once parsed),
warnings, line numbers and kept lines for any block size, and a session opened
so must answer and append as one opened lazily.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import REPO, require
from tests.unit.store.helpers import HEADER, assistant, user
from tests.unit.store.test_scan import _PIECES, line, session_bytes

from pi_sessiond.cli.local import LocalDaemon
from pi_sessiond.examples.generator import write_stream
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.store.detached import read_in_blocks
from pi_sessiond.store.entry import OwnLineEntry
from pi_sessiond.store.reader import ReadResult, parse_session_bytes
from pi_sessiond.store.session import Session

BLOCKS = (1, 7, 64, 300, 1 << 22)
WILD = REPO.parent / "shared" / "fixtures" / "wild"
NEW = {"type": "message", "message": {"role": "user", "content": "one more thing", "timestamp": 9}}


def signature(result: ReadResult) -> tuple[Any, ...]:
    # data before role: a line whose body is not JSON loses the role its start promised once parsed
    entries = [(e.id, e.parent_id, e.type, e.timestamp, e.line, e.data, e.role) for e in result.entries]
    kept = [(entry.id if entry is not None else None, raw) for entry, raw in result.kept]
    return (entries, [(w.line, w.message) for w in result.warnings], kept, result.header, result.size,
            result.ends_with_newline, result.header_line, result.line_count)


def assert_same(path: Path) -> ReadResult:
    reference = signature(parse_session_bytes(path.read_bytes()))
    small = path.stat().st_size < 64 << 10  # a line grows a byte at a time in 1-byte blocks: quadratic
    for block in BLOCKS if small else [b for b in BLOCKS if b >= 300]:
        read = read_in_blocks(path, block)
        assert read is not None, f"block={block}: a v3 file is read in blocks"
        result, _ = read
        assert all(isinstance(entry, OwnLineEntry) for entry in result.entries)
        assert signature(result) == reference, f"block={block}"
        assert all(entry.raw is None for entry in result.entries), f"block={block}: a parsed entry kept its line"
    return result


def test_standard_lines_read_in_blocks_as_the_reader_reads_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_stream(path, seed=4, entries=120, shape="linear")
    assert len(assert_same(path).entries) == 120


def test_broken_torn_and_extra_header_lines_are_reported_where_they_are(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(line(user("a1", None, "x")), b"junk", line(HEADER), b"",
                                   line(assistant("b2", "a1", "y")), b'{"type":"message","id":"c3"', end=b""))
    result = assert_same(path)
    assert [w.line for w in result.warnings] == [3, 4, 7] and not result.ends_with_newline


def test_a_line_too_deep_to_read_stays_after_the_entry_before_it_in_another_block(tmp_path: Path) -> None:
    too_deep = b'{"type":"message","id":"x2","parentId":"x1","timestamp":"t","message":{"role":"user","c":' + (
        b"[" * 100_001 + b"]" * 100_001 + b"}}")
    path = tmp_path / "s.jsonl"
    path.write_bytes(session_bytes(line(user("x1", None, "a")), too_deep, line(user("x3", "x1", "b"))))
    result = assert_same(path)
    assert [(e.id if e is not None else None, raw) for e, raw in result.kept] == [("x1", too_deep)]


@pytest.mark.parametrize("first", [
    json.dumps({**HEADER, "version": 2}).encode(), json.dumps({**HEADER, "version": 1}).encode(),
    line(user("a1", None, "no header")), b"", b"\xef\xbb\xbf" + line(HEADER)])
def test_files_a_write_would_replace_whole_are_left_to_the_whole_file_read(tmp_path: Path, first: bytes) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(first + b"\n" + line(user("a1", None, "x")) + b"\n" if first else b"")
    assert read_in_blocks(path) is None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_PIECES, max_size=12), block=st.sampled_from([1, 5, 40, 200]), newline_end=st.booleans())
def test_any_mix_of_lines_in_any_blocks_reads_as_the_reader_reads_it(
        tmp_path: Path, pieces: list[bytes], block: int, newline_end: bool) -> None:
    path = tmp_path / "mix.jsonl"
    path.write_bytes(line(HEADER) + b"\n" + b"\n".join(pieces) + (b"\n" if newline_end else b""))
    read = read_in_blocks(path, block)
    assert read is not None
    assert signature(read[0]) == signature(parse_session_bytes(path.read_bytes()))


def _wild_v3() -> list[Path]:
    files = sorted(WILD.glob("*.jsonl")) if WILD.is_dir() else []
    return [p for p in files if p.read_bytes()[:200].find(b'"version":3') >= 0]


def test_the_real_files_from_public_repositories_read_in_blocks_as_whole() -> None:
    files = _wild_v3()
    require(len(files) >= 10, f"the v3 files of {WILD} (fixtures from public repositories)")
    for path in files:
        try:
            assert_same(path)
        except AssertionError as exc:
            raise AssertionError(f"{path.name}: {exc}") from None


def _as_json(messages: Any) -> str:
    return dumps(list(messages)).decode()


def test_a_session_read_in_blocks_answers_and_appends_as_one_read_lazily(tmp_path: Path) -> None:
    lazy_path, block_path = tmp_path / "lazy.jsonl", tmp_path / "blocks.jsonl"
    write_stream(lazy_path, seed=7, entries=300, shape="branchy")
    block_path.write_bytes(before := lazy_path.read_bytes())
    lazy, blocks = Session.open(lazy_path), Session.open(block_path, in_blocks=True)
    assert _as_json(blocks.context().messages) == _as_json(lazy.context().messages)
    assert [(e.id, e.parent_id) for e in blocks.tree.entries] == [(e.id, e.parent_id) for e in lazy.tree.entries]
    lazy.append([NEW])
    blocks.append([NEW])
    after = block_path.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    assert _as_json(Session.open(block_path).context().messages) == _as_json(lazy.context().messages)


def test_a_one_shot_command_opens_in_blocks_only_when_it_asks(tmp_path: Path) -> None:
    write_stream(tmp_path / "a.jsonl", seed=2, entries=80, shape="linear")
    (tmp_path / "b.jsonl").write_bytes((tmp_path / "a.jsonl").read_bytes())
    local = LocalDaemon()
    lazy, blocks = local.open(tmp_path / "a.jsonl"), local.open(tmp_path / "b.jsonl", in_blocks=True)
    lazy_entries = local.service.registry.get(lazy.session_id).session.tree.entries
    block_entries = local.service.registry.get(blocks.session_id).session.tree.entries
    assert len(block_entries) == 80 and all(isinstance(entry, OwnLineEntry) for entry in block_entries)
    assert not any(isinstance(entry, OwnLineEntry) for entry in lazy_entries)

"""The fast open (``store/scan.py``): deferred lines are read exactly as the per-line reader reads them.

Every file is read twice, by ``reader.parse_session_bytes`` (one line at a
time, the reference) and by ``scan.scan_session_bytes`` (regex rows, entries
made on demand), at several chunk sizes so chunk borders fall everywhere; the
entries, warnings, kept lines and counts must be identical.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.store.helpers import HEADER, assistant, user

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.store.reader import ReadResult, parse_session_bytes
from pi_sessiond.store.scan import scan_session_bytes
from pi_sessiond.store.session import Session
from pi_sessiond.store.table import EntryTable

CHUNKS = (1, 7, 300, 1 << 18)


def line(obj: Any) -> bytes:
    return dumps(obj)  # as Pi writes it (any depth)


def signature(result: ReadResult) -> tuple[Any, ...]:
    entries = [(e.id, e.parent_id, e.type, e.timestamp, e.line, e.role, e.raw, e._data) for e in result.entries]
    kept = [(entry.id if entry is not None else None, raw) for entry, raw in result.kept]
    return (entries, [(w.line, w.message) for w in result.warnings], kept, result.header, result.size,
            result.ends_with_newline, result.header_line, result.line_count)


def scanned(buf: bytes, chunk: int = 1 << 18) -> ReadResult:
    result = scan_session_bytes(buf, chunk=chunk)
    assert result is not None, "the fast path should apply to a v3 file with its header on line 1"
    return result


def assert_same(buf: bytes) -> ReadResult:
    reference = signature(parse_session_bytes(buf))
    for chunk in CHUNKS:
        result = scanned(buf, chunk)
        assert signature(result) == reference, f"chunk={chunk}"  # entries made in bulk (iteration)
        one_by_one = scanned(buf, chunk)
        for i in reversed(range(len(one_by_one.entries))):  # each made alone, last first
            one_by_one.entries[i]
        assert signature(one_by_one) == reference, f"chunk={chunk}, made one by one"
    return scanned(buf)


def session_bytes(*lines: bytes, end: bytes = b"\n") -> bytes:
    return b"\n".join([line(HEADER), *lines]) + end


def test_standard_lines_are_deferred_and_read_as_the_reader_reads_them() -> None:
    buf = session_bytes(line(user("a1", None, "hi")), line(assistant("b2", "a1", "yo")), line(user("c3", "b2", "x")))
    result = assert_same(buf)
    assert isinstance(result.entries, EntryTable)
    fresh = scanned(buf)
    assert isinstance(fresh.entries, EntryTable) and fresh.entries.count_made() == 0
    assert fresh.entries.ids == ["a1", "b2", "c3"] and fresh.entries.parents == [None, "a1", "b2"]
    assert fresh.entries[1].role == "assistant" and fresh.entries.count_made() == 1


def test_fields_in_another_order_fall_back_to_a_full_parse() -> None:
    reordered = {"id": "r1", "type": "message", "parentId": None, "timestamp": "t",
                 "message": {"role": "user", "content": "x"}}
    result = assert_same(session_bytes(line(reordered), line(user("u2", "r1", "y"))))
    assert [e.id for e in result.entries] == ["r1", "u2"]
    assert result.entries[0]._data == reordered  # parsed at open, not deferred


def test_escaped_quotes_and_non_ascii_in_ids() -> None:
    quoted = user('a"b', None, "x")
    backslash = user("c\\d", 'a"b', "y")
    unicode = user("é€1", "c\\d", "z")
    result = assert_same(session_bytes(line(quoted), line(backslash), line(unicode), line(user("e5", "é€1", "w"))))
    assert [e.id for e in result.entries] == ['a"b', "c\\d", "é€1", "e5"]
    assert [e.parent_id for e in result.entries] == [None, 'a"b', "c\\d", "é€1"]


def test_a_null_parent_and_an_empty_parent_string() -> None:
    empty_parent = user("p2", None, "x")
    empty_parent["parentId"] = ""
    result = assert_same(session_bytes(line(user("p1", None, "x")), line(empty_parent)))
    assert [e.parent_id for e in result.entries] == [None, ""]


def test_non_json_torn_and_blank_lines_are_reported_where_they_are() -> None:
    good = line(user("g1", None, "x"))
    torn_middle = line(user("t2", "g1", "a long text"))[:-12]  # cut mid-line, then a newline: never deferred
    body_not_json = b'{"type":"message","id":"n3","parentId":"g1","timestamp":"t","message":{"role":"user",]}'
    buf = session_bytes(good, b"not json at all", torn_middle, b"", b"   ", body_not_json, b"[1,2]",
                        line(user("g4", "g1", "y")) + b"\r", line(user("g5", "g4", "tail"))[:-5], end=b"")
    result = assert_same(buf)
    messages = [w.message for w in result.warnings]
    assert "malformed JSON line skipped" in messages and "torn last line (incomplete write) ignored" in messages
    assert [e.id for e in result.entries] == ["g1", "n3", "g4"]


def test_an_escaped_or_non_ascii_timestamp_is_read_as_the_reader_reads_it() -> None:
    escaped = user("t1", None, "x")
    escaped["timestamp"] = 'a"quoted\\time'
    unicode = user("t2", "t1", "y")
    unicode["timestamp"] = "2026-01-01T00:00:01.000Z ☃"
    result = assert_same(session_bytes(line(escaped), line(unicode), line(user("t3", "t2", "z"))))
    assert [e.timestamp for e in result.entries][:2] == ['a"quoted\\time', "2026-01-01T00:00:01.000Z ☃"]


def test_fix_a_broken_line_with_an_escaped_timestamp_stays_an_entry_without_a_message() -> None:
    """The scan does not read timestamps, so such a line is deferred; the reader skipped it (docs/deviations.md)."""
    broken = b'{"type":"message","id":"b2","parentId":"a1","timestamp":"x\\"y","message":{"role":"user",,}}'
    buf = session_bytes(line(user("a1", None, "x")), broken, line(user("c3", "b2", "z")))
    reference = parse_session_bytes(buf)
    assert [e.id for e in reference.entries] == ["a1", "c3"]
    assert [w.message for w in reference.warnings] == ["malformed JSON line skipped"]
    result = scanned(buf)
    assert [e.id for e in result.entries] == ["a1", "b2", "c3"] and result.warnings == []
    made = result.entries[1]
    assert made.type == "message" and made.message is None and made.parent_id == "a1"


def test_a_line_ten_thousand_levels_deep() -> None:
    deep = user("d2", "s1", "x")
    deep["message"]["content"] = [{"type": "text", "text": "deep"}]
    nested: Any = "bottom"
    for _ in range(10_000):
        nested = [nested]
    deep["message"]["details"] = nested
    result = assert_same(session_bytes(line(user("s1", None, "x")), line(deep), line(user("d3", "d2", "y"))))
    assert [e.id for e in result.entries] == ["s1", "d2", "d3"]
    assert result.entries[1].data["message"]["details"][0][0][0] is not None


def test_a_line_too_deep_to_read_is_kept_as_it_was() -> None:
    too_deep = b'{"type":"message","id":"x2","parentId":"x1","timestamp":"t","message":{"role":"user","c":' + (
        b"[" * 100_001 + b"]" * 100_001 + b"}}")
    buf = session_bytes(line(user("x1", None, "a")), too_deep, line(user("x3", "x1", "b")))
    result = assert_same(buf)
    assert [e.id for e in result.entries] == ["x1", "x3"]
    assert result.kept == [(result.entries[0], too_deep)]


def test_long_lines_that_are_not_deep_stay_deferred_or_not_as_the_reader_decides() -> None:
    long_text = user("l2", "l1", "y" * 250_000)  # longer than the lazy limit: parsed at open, like the reader
    medium = user("l3", "l2", "z" * 120_000)
    assert_same(session_bytes(line(user("l1", None, "a")), line(long_text), line(medium)))


def test_duplicate_ids_cycles_labels_names_and_other_types() -> None:
    rows = [user("a", None, "x"), assistant("b", "a", "y"), user("a", "b", "dup"),
            {"type": "label", "id": "l", "parentId": "a", "timestamp": "t", "targetId": "b", "label": "mark"},
            {"type": "session_info", "id": "n", "parentId": "l", "timestamp": "t", "name": " named "},
            {"type": "custom", "customType": "x", "data": {}, "id": "c", "parentId": "n", "timestamp": "t"},
            user("self", "self", "loop"), user("z", "y", "cycle"), user("y", "z", "cycle"),
            {"type": "session", "version": 3, "id": "again", "timestamp": "t", "cwd": "/"}]
    buf = session_bytes(*(line(r) for r in rows))
    assert_same(buf)


def test_idless_entries_are_dropped_with_a_warning_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    idless = user("", "a", "x")
    path.write_bytes(session_bytes(line(user("a", None, "x")), line(idless), line(user("b", "a", "y"))))
    session = Session.open(path)
    assert [e.id for e in session.entries] == ["a", "b"]
    assert [w.message for w in session.warnings] == ["entry without an id skipped"]


@pytest.mark.parametrize("header", [b"", b"\n", b'{"type":"session","id":"s","version":2}\n',
                                    b'{"type":"session","id":"s"}\n', b'  {"type":"session","version":3,"id":"s"}\n'])
def test_files_needing_the_reader_are_left_to_it(header: bytes) -> None:
    assert scan_session_bytes(header + line(user("a", None, "x")) + b"\n") is None


def test_generated_sessions_open_to_the_same_tree_and_context(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    for shape in ("linear", "long", "branchy"):
        write(path, generate(seed=11, entries=1500, shape=shape, compaction_every=400))
        buf = path.read_bytes()
        assert_same(buf)
        scanned_session, reference = Session.open(path), Session.open(path)
        for entry in reference.entries:
            entry.data  # noqa: B018 - the reference parses everything
        assert list(scanned_session.context().messages) == list(reference.context().messages)
        assert scanned_session.tree.labels == reference.tree.labels
        assert [e.id for e, _ in scanned_session.tree.walk()] == [e.id for e, _ in reference.tree.walk()]


_PIECES = st.sampled_from([
    line(user("a1", None, "x")), line(assistant("b2", "a1", "y")), line(user("c3", "b2", "z")),
    line(user("a1", "c3", "dup")), b"", b"junk", b"{", b"}", b'{"type":"message"}', b"[]", b"null",
    line({"type": "label", "id": "l1", "parentId": "a1", "timestamp": "t", "targetId": "a1", "label": "x"}),
    line({"id": "o1", "type": "message", "parentId": "a1", "timestamp": "t", "message": {"role": "user"}}),
    b'{"type":"message","id":"q\\"1","parentId":null,"timestamp":"t","message":{"role":"user"}}',
    b'{"type":"message","id":"w1","parentId":null,"timestamp":"t","message":{"role":"user"',
    b'{"type":"message","id":"v1","parentId":null,"timestamp":"t","message":{"role":"user"}} ',
])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, max_size=12), cut=st.integers(0, 40), newline_end=st.booleans())
def test_any_mix_of_lines_reads_as_the_reader_reads_it(pieces: list[bytes], cut: int, newline_end: bool) -> None:
    buf = line(HEADER) + b"\n" + b"\n".join(pieces) + (b"\n" if newline_end else b"")
    if cut:
        buf = buf[: max(len(buf) - cut, len(line(HEADER)) + 1)]
    assert_same(buf)

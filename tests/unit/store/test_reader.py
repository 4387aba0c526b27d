"""Loading never crashes, never writes, and says what it skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.unit.store.helpers import HEADER, assistant, user, write_lines

from pi_sessiond.store.errors import NotASessionError
from pi_sessiond.store.session import Session


def test_real_fixture_counts(real_session: Path) -> None:
    session = Session.open(real_session)
    assert session.warnings == []
    assert session.source_version == 1
    assert len(session.entries) == 1002
    kinds = [e.type for e in session.entries]
    assert kinds.count("message") == 990
    assert kinds.count("compaction") == 2
    assert kinds.count("model_change") == 5
    assert kinds.count("thinking_level_change") == 5
    roles = [e.role for e in session.entries if e.type == "message"]
    assert (roles.count("user"), roles.count("assistant"), roles.count("toolResult")) == (55, 484, 448)
    assert roles.count("bashExecution") == 3


def test_malformed_middle_line_is_skipped_with_its_line_number(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])
    lines = path.read_text().splitlines()
    lines.insert(2, '{"type":"message", broken')
    path.write_text("\n".join(lines) + "\n")
    before = path.read_bytes()
    session = Session.open(path)
    assert [(w.line, w.message) for w in session.warnings] == [(3, "malformed JSON line skipped")]
    assert [e.id for e in session.entries] == ["a", "b"]
    assert path.read_bytes() == before


def test_torn_last_line_is_ignored_and_repaired_only_by_a_newline(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])
    torn = b'{"type":"message","id":"c","parentId":"b","timestamp":"2026-01-01T00:00:09.000Z","mess'
    path.write_bytes(path.read_bytes() + torn)
    session = Session.open(path)
    assert [w.line for w in session.warnings] == [4]
    assert "torn" in session.warnings[0].message
    assert session.leaf_id == "b"
    session.append([{"type": "session_info", "name": "x"}])
    data = path.read_bytes()
    assert torn + b"\n" in data  # nothing truncated, the torn bytes stay
    reopened = Session.open(path)
    assert [e.type for e in reopened.entries] == ["message", "message", "session_info"]
    assert reopened.entries[-1].parent_id == "b"


def test_second_header_is_skipped(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), HEADER, assistant("b", "a", "yo")])
    session = Session.open(path)
    assert [(w.line, w.message) for w in session.warnings] == [(3, "extra session header skipped")]
    assert [e.id for e in session.entries] == ["a", "b"]


def test_file_without_header_is_refused_and_untouched(tmp_path: Path) -> None:
    """Pi 1.6.0 refuses it with this reason (0.73.1 overwrote it; we opened it read-only)."""
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")], header=False)
    before = path.read_bytes()
    with pytest.raises(NotASessionError, match=r"^Session file is not a valid pi session: ") as caught:
        Session.open(path)
    assert caught.value.reason == "notASession" and caught.value.path == str(path)
    assert path.read_bytes() == before


@pytest.mark.parametrize("data", [b"\x00\x01\x89PNG\r\n\x1a\n\xff\xfe", b"\n\n  \n", b"not json\n"])
def test_binary_blank_and_junk_files_are_refused_untouched(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    with pytest.raises(NotASessionError):
        Session.open(path)
    assert path.read_bytes() == data


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotASessionError, match="a directory"):
        Session.open(tmp_path)


def test_fix_no_write_on_open(tmp_path: Path) -> None:
    """Pi 1.6.0 appends a newline to a torn last line when it opens the file; loading never writes."""
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])
    data = path.read_bytes() + b'{"type":"message","id":"c"'
    path.write_bytes(data)
    session = Session.open(path)
    session.context()
    session.projection()
    assert path.read_bytes() == data
    session.append([{"type": "session_info", "name": "x"}])
    assert path.read_bytes().startswith(data + b"\n")  # mended only before our first append


def test_empty_and_blank_files(tmp_path: Path) -> None:
    empty = tmp_path / "e.jsonl"
    empty.write_bytes(b"")
    assert Session.open(empty).entries == []
    assert Session.open(empty).context().messages == []
    assert empty.read_bytes() == b""  # a 0-byte file opens as a new session and is not written


def test_orphans_and_self_parented_entries_never_hang(tmp_path: Path) -> None:
    lines = [user("a", None, "hi"), assistant("b", "a", "yo"), user("c", "zzz", "orphan", 3),
             assistant("d", "d", "self", 4), user("e", "f", "cycle", 5), assistant("f", "e", "cycle", 6)]
    session = Session.open(write_lines(tmp_path / "s.jsonl", lines))
    roots = [e.id for e in session.tree.roots()]
    assert roots == ["a", "c", "d"]
    assert [e.id for e in session.path_to("d")] == ["d"]
    assert [e.id for e in session.path_to("f")] == ["e", "f"]
    assert len(session.context("c").messages) == 1
    assert len(list(session.tree.walk())) >= 4


def test_non_object_and_id_less_lines_are_reported(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), [1, 2],
                                              {"type": "message", "message": {"role": "user"}},
                                              user("b", "a", "again")])
    session = Session.open(path)
    assert [w.line for w in session.warnings] == [3, 4]
    assert [e.id for e in session.entries] == ["a", "b"]


def test_an_id_less_last_entry_is_the_leaf_as_in_pi(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), {"type": "message", "parentId": "a",
                                                                      "message": {"role": "user", "content": "x"}}])
    session = Session.open(path)
    assert [e.id for e in session.entries] == ["a", "noid-L3"] and session.leaf_id == "noid-L3"
    assert [m["content"] for m in session.context().messages] == ["hi", "x"]

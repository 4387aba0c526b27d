"""Fork as Pi 1.6.0's ``createBranchedSession``: parents re-chained, boundaries moved off labels."""

from __future__ import annotations

from pathlib import Path

from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.session import Session


def _label(id_: str, parent: str, target: str, ts: int) -> dict[str, object]:
    return {"type": "label", "id": id_, "parentId": parent, "timestamp": f"2026-01-01T00:00:0{ts}.000Z",
            "targetId": target, "label": f"L{id_}"}


def _compaction(id_: str, parent: str, first_kept: str) -> dict[str, object]:
    return {"type": "compaction", "id": id_, "parentId": parent, "timestamp": "2026-01-01T00:00:09.000Z",
            "summary": "S", "firstKeptEntryId": first_kept, "tokensBefore": 5}


def test_fork_rechains_and_moves_first_kept_off_labels(tmp_path: Path) -> None:
    # a compaction keeping from a dropped label: [u1, a1, label(u1), T, u2, a2, C(firstKept = the label)]
    lines = [user("u1", None, "1", 1), assistant("a1", "u1", "2", 2), _label("l1", "a1", "u1", 3),
             {"type": "thinking_level_change", "id": "T", "parentId": "l1", "timestamp": "2026-01-01T00:00:04.000Z",
              "thinkingLevel": "high"},
             user("u2", "T", "3", 5), assistant("a2", "u2", "4", 6), _compaction("C", "a2", "l1"),
             _label("l2", "C", "u2", 7), _compaction("C2", "l2", "l2")]
    source = Session.open(write_lines(tmp_path / "s.jsonl", lines))
    fork = fork_session(source, "C2", tmp_path / "out")
    data = [e.data for e in fork.entries]
    assert [(d["id"], d["parentId"]) for d in data[:7]] == [
        ("u1", None), ("a1", "u1"), ("T", "a1"), ("u2", "T"), ("a2", "u2"), ("C", "a2"), ("C2", "C")]
    assert data[5]["firstKeptEntryId"] == "T"
    assert data[6]["firstKeptEntryId"] == "C2"  # a label right before the compaction: retain-none
    assert list(data[3]) == list(lines[4])  # key order kept
    labels = data[7:]
    assert [(d["targetId"], d["timestamp"]) for d in labels] == [
        ("u1", "2026-01-01T00:00:03.000Z"), ("u2", "2026-01-01T00:00:07.000Z")]
    assert labels[0]["parentId"] == "C2" and labels[1]["parentId"] == labels[0]["id"]
    reopened = Session.open(fork.path) if fork.path is not None else None
    assert reopened is not None and all(e.parent_id is None or e.parent_id in reopened.tree for e in reopened.entries)


def test_untouched_entries_keep_their_bytes(tmp_path: Path) -> None:
    lines = [user("a", None, "1", 1), assistant("b", "a", "2", 2)]
    source = Session.open(write_lines(tmp_path / "s.jsonl", lines))
    fork = fork_session(source, "b", tmp_path / "out")
    assert fork.path is not None
    assert fork.path.read_text().splitlines()[1:] == (tmp_path / "s.jsonl").read_text().splitlines()[1:]

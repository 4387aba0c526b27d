"""Appends, deferred creation, byte-identical untouched lines, fork, listing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.layout import cwd_dir_name, iso_ms, new_session_id, session_file_name
from pi_sessiond.store.listing import list_sessions
from pi_sessiond.store.session import Session

USER = {"type": "message", "message": {"role": "user", "content": "hello", "timestamp": 1}}
ASSISTANT = {"type": "message", "message": assistant("x", None, "hi")["message"]}


def test_new_session_file_appears_with_the_first_user_message(tmp_path: Path) -> None:
    """Pi 1.6.0 (#10000): setup entries alone leave no file; the first user message creates it."""
    session = Session.create("/work/p", tmp_path)
    assert session.path is not None and session.path.parent == tmp_path
    session.append([{"type": "thinking_level_change", "thinkingLevel": "off"}])
    assert not session.path.exists()
    session.append([USER])
    assert len(session.path.read_text().splitlines()) == 3
    session.append([ASSISTANT])
    lines = [json.loads(x) for x in session.path.read_text().splitlines()]
    assert [x["type"] for x in lines] == ["session", "thinking_level_change", "message", "message"]
    assert list(lines[0]) == ["type", "version", "id", "timestamp", "cwd"]
    assert list(lines[2])[:5] == ["type", "id", "parentId", "timestamp", "message"]
    assert lines[2]["parentId"] == lines[1]["id"] and lines[1]["parentId"] is None
    assert all(len(x["id"]) == 8 for x in lines[1:])
    session.append([USER])
    assert len(session.path.read_text().splitlines()) == 5


def test_append_keeps_untouched_lines_byte_identical(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "héllo 🚀"), assistant("b", "a", "yo")])
    raw = path.read_bytes().replace(b'"yo"', b'"yo","x_future":{"z":[1,2.5e-7]}')
    path.write_bytes(raw)
    session = Session.open(path)
    session.append([{"type": "custom", "customType": "k", "data": None}])
    data = path.read_bytes()
    assert data.startswith(raw)
    last = json.loads(data.splitlines()[-1])
    assert list(last) == ["type", "customType", "data", "id", "parentId", "timestamp"]
    assert session.render() == data


def test_complete_sees_the_assigned_id_and_time_before_the_write(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [user("a", None, "hi"), assistant("b", "a", "yo")])
    session = Session.open(path)
    seen: list[dict[str, object]] = []

    def complete(position: int, full: dict[str, object]) -> dict[str, object]:
        assert position == 0
        seen.append(dict(full))
        return {**full, "firstKeptEntryId": full["id"], "at": iso_ms(str(full["timestamp"]))}

    [written] = session.append([{"type": "compaction", "summary": "s", "firstKeptEntryId": None,
                                 "tokensBefore": 1}], complete=complete)
    on_disk = json.loads(path.read_bytes().splitlines()[-1])
    assert on_disk == written.data and on_disk["firstKeptEntryId"] == on_disk["id"] == seen[0]["id"]
    assert seen[0]["parentId"] == "b" and on_disk["at"] == iso_ms(on_disk["timestamp"])


def test_iso_ms_is_javascripts_get_time() -> None:
    # values from node: new Date("…").getTime()
    assert iso_ms("2026-11-20T00:00:01.123Z") == 1795132801123
    assert iso_ms("2026-11-20T00:00:01.999Z") == 1795132801999
    assert iso_ms("1970-01-01T00:00:00.000Z") == 0


def test_context_is_incremental_and_equals_a_rebuild(tmp_path: Path) -> None:
    session = Session.open(write_lines(tmp_path / "s.jsonl", [user("a", None, "1"), assistant("b", "a", "2")]))
    before = session.context()
    session.append([USER, ASSISTANT, {"type": "model_change", "provider": "q", "modelId": "z"}])
    after = session.context()
    assert len(before.messages) == 2  # an old snapshot does not change
    assert len(after.messages) == 4 and after.model == {"provider": "q", "modelId": "z"}
    fresh = Session.open(session.path)  # type: ignore[arg-type]
    assert list(fresh.context().messages) == list(after.messages)
    session.set_leaf("a")
    assert len(session.context().messages) == 1


def test_fork_copies_the_path_and_its_labels(tmp_path: Path) -> None:
    lines = [user("a", None, "1", 1), assistant("b", "a", "2", 2), user("c", "b", "3", 3),
             assistant("d", "a", "side", 4),
             {"type": "label", "id": "l1", "parentId": "c", "timestamp": "2026-01-01T00:00:05.000Z",
              "targetId": "b", "label": "keep"},
             {"type": "label", "id": "l2", "parentId": "l1", "timestamp": "2026-01-01T00:00:06.000Z",
              "targetId": "d", "label": "other branch"}]
    source = Session.open(write_lines(tmp_path / "s.jsonl", lines))
    fork = fork_session(source, "c")
    assert fork.path is not None and fork.path.exists() and fork.path.parent == tmp_path
    assert fork.header["parentSession"] == str((tmp_path / "s.jsonl").resolve())
    assert [e.id for e in fork.entries][:3] == ["a", "b", "c"]
    label = fork.entries[3]
    assert (label.type, label.parent_id, label.data["targetId"], label.data["label"]) == ("label", "c", "b", "keep")
    assert label.timestamp == "2026-01-01T00:00:05.000Z"
    assert fork.tree.labels == {"b": "keep"}
    assert len(fork.entries) == 4


def test_layout_and_listing(tmp_path: Path) -> None:
    assert cwd_dir_name("/Users/badlogic/workspaces/pi-mono") == "--Users-badlogic-workspaces-pi-mono--"
    assert cwd_dir_name("C:\\proj\\x") == "--C--proj-x--"
    assert session_file_name("2025-12-09T00:52:54.397Z", "abc") == "2025-12-09T00-52-54-397Z_abc.jsonl"
    sid = new_session_id()
    assert len(sid) == 36 and sid[14] == "7"
    older = write_lines(tmp_path / "a.jsonl", [user("a", None, "first question", 1), assistant("b", "a", "x", 2)])
    newer = Session.create("/w", tmp_path)
    newer.append([{"type": "message", "message": {"role": "user", "content": "later", "timestamp": 9e12}},
                  {"type": "session_info", "name": "Named"}, ASSISTANT])
    (tmp_path / "junk.jsonl").write_text("not json\n")
    rows = list_sessions(tmp_path)
    assert [r["path"] for r in rows] == [str(newer.path), str(older)]
    assert rows[0]["name"] == "Named" and rows[0]["firstMessage"] == "later"
    assert rows[1]["firstMessage"] == "first question" and rows[1]["messageCount"] == 2


def _said(text: str) -> dict[str, object]:
    return {"type": "message", "message": {"role": "user", "content": text, "timestamp": 1}}


def test_the_leafs_path_is_kept_by_appends_and_walked_again_after_the_leaf_moves() -> None:
    session = Session.create("/w", None)
    assert session.path_to() == []
    first = session.append([_said("u1")])[0]
    for n in range(5):
        session.append([_said(f"u{n}")])
    assert session.path_to() == session.tree.path() and len(session.path_to()) == 6
    kept = session.path_to()
    kept.append(first)  # a new list each time: the caller's copy is its own
    assert len(session.path_to()) == 6
    session.set_leaf(first.id)
    assert session.path_to() == [first]
    branch = session.append([_said("b1")])[0]
    assert session.path_to() == [first, branch] == session.tree.path()
    session.set_leaf(None)
    root = session.append([_said("another root")])[0]
    assert session.path_to() == [root] == session.tree.path()
    assert session.path_to(branch.id) == [first, branch]
    session.set_leaf(branch.id)  # no path asked for between the move and the append
    leaf = session.append([_said("b2")])[0]
    assert session.path_to() == [first, branch, leaf] == session.tree.path()

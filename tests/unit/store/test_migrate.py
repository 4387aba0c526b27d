"""v1 -> v3 migration: deterministic ids, kept indices, one atomic rewrite."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from pi_sessiond.store.session import Session


def test_fixture_gets_deterministic_chained_ids(real_session: Path) -> None:
    session = Session.open(real_session)
    assert session.header["version"] == 3
    ids = [e.id for e in session.entries]
    assert ids == [f"{k:08x}" for k in range(1, 1003)]
    assert [e.parent_id for e in session.entries] == [None, *ids[:-1]]
    kept = [e.data["firstKeptEntryId"] for e in session.entries if e.type == "compaction"]
    assert kept == [f"{293:08x}", f"{551:08x}"]  # firstKeptEntryIndex 293 and 551 (header = 0)
    assert all("firstKeptEntryIndex" not in e.data for e in session.entries)


def test_fixture_context_from_the_leaf(real_session: Path) -> None:
    ctx = Session.open(real_session).context()
    roles = [m["role"] for m in ctx.messages]
    assert len(roles) == 446
    assert roles[0] == "compactionSummary"
    assert (roles.count("assistant"), roles.count("toolResult"), roles.count("user")) == (219, 192, 31)
    assert roles.count("bashExecution") == 3
    assert ctx.thinking_level == "off"
    assert ctx.model == {"provider": "anthropic", "modelId": "claude-opus-4-5"}


def test_loading_never_rewrites_and_first_write_rewrites_once_atomically(
    real_session: Path, tmp_path: Path
) -> None:
    path = tmp_path / "legacy.jsonl"
    shutil.copyfile(real_session, path)
    original = path.read_bytes()
    session = Session.open(path)
    assert path.read_bytes() == original
    session.append([{"type": "session_info", "name": "renamed"}])
    lines = path.read_text().splitlines()
    assert len(lines) == 1004
    header = json.loads(lines[0])
    assert header["version"] == 3 and header["id"] == "ffae836b-9420-4060-ac13-7745215f90ff"
    assert list(header)[-1] == "version"  # Pi adds the key in place, at the end
    first = json.loads(lines[1])
    assert (first["id"], first["parentId"]) == ("00000001", None)
    assert list(first)[-2:] == ["id", "parentId"]
    assert json.loads(lines[-1])["parentId"] == f"{1002:08x}"
    assert not list(tmp_path.glob(".*tmp"))
    session.close()  # release the write lock before another writer opens the file
    again = Session.open(path)
    assert again.source_version == 3
    assert [e.id for e in again.entries][:1002] == [e.id for e in session.entries][:1002]
    after = path.read_bytes()
    again.append([{"type": "session_info", "name": "second"}])
    assert path.read_bytes().startswith(after)  # now a plain append


def test_v1_fixture_lines_survive_migration_semantically(real_session: Path) -> None:
    session = Session.open(real_session)
    source = [json.loads(x) for x in real_session.read_text().splitlines()[1:]]
    for original, entry in zip(source, session.entries, strict=True):
        data = dict(entry.data)
        data.pop("id"), data.pop("parentId")
        if original["type"] == "compaction":
            original.pop("firstKeptEntryIndex")
            data.pop("firstKeptEntryId")
        assert data == original


def test_v2_hook_message_becomes_custom(tmp_path: Path) -> None:
    header = {"type": "session", "version": 2, "id": "s2", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/"}
    hook = {"type": "message", "id": "aa", "parentId": None, "timestamp": "2026-01-01T00:00:01.000Z",
            "message": {"role": "hookMessage", "customType": "x", "content": "c", "display": True, "timestamp": 1}}
    path = tmp_path / "v2.jsonl"
    path.write_text(json.dumps(header) + "\n" + json.dumps(hook) + "\n")
    session = Session.open(path)
    assert session.entries[0].id == "aa"
    assert session.entries[0].message == {**hook["message"], "role": "custom"}
    assert session.header["version"] == 3

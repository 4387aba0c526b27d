"""Every request of the method table against the real daemon subprocess (pytest-lsp).

Each test starts its own daemon (``daemons.start``) with ``sessionsDir`` in the
test's tmp folder and ``PI_CODING_AGENT_DIR`` pointed at an empty folder; the
summarizer is the offline one unless a test routes it to the loopback provider.
Helpers and hang-trap notes: ``tests/e2e/daemon_client.py``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    TIMEOUT,
    Daemons,
    assistant_msg,
    call,
    cli_json,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    events,
    generated,
    loopback_settings,
    read_lines,
    send,
    settle,
    user_msg,
    wait_event,
)
from tests.loopback_provider import Fault, LoopbackProvider

SESSION_KEYS = {"sessionId", "path", "header", "leafId", "entryCount", "warnings", "loading"}


async def rpc_error(coro: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await coro
    return info.value


async def open_path(client: Any, path: Path) -> dict[str, Any]:
    return await call(client, "pi/openSession", {"path": str(path)})  # type: ignore[no-any-return]


# ------------------------------------------------------------------ sessions


async def test_create_session_file_appears_with_the_first_user_message(
    daemons: Daemons, tmp_path: Path
) -> None:
    client = await daemons.start()
    cwd = str(tmp_path / "project")
    session = await call(client, "pi/createSession", {"cwd": cwd})
    assert set(session) == SESSION_KEYS
    assert session["header"]["type"] == "session" and session["header"]["cwd"] == cwd
    assert session["sessionId"] == session["header"]["id"]
    assert session["leafId"] is None and session["entryCount"] == 0 and session["warnings"] == []
    path = Path(session["path"])
    assert path.parent == daemons.sessions_dir and path.name.endswith(f"_{session['sessionId']}.jsonl")
    assert not path.exists()

    setup = {"type": "thinking_level_change", "thinkingLevel": "high"}
    zero = await call(client, "pi/append", {"sessionId": session["sessionId"], "entries": [setup]})
    assert not path.exists()  # as Pi 1.6.0: setup entries alone leave no file
    first = await call(client, "pi/append", {"sessionId": session["sessionId"], "entries": [user_msg("hello")]})
    assert path.exists()  # as Pi 1.6.0: the file appears at the first user message
    second = await call(client, "pi/append", {"sessionId": session["sessionId"], "entries": [assistant_msg("hi")]})
    lines = read_lines(path)  # right after the reply
    assert lines[0]["id"] == session["sessionId"] and lines[0]["type"] == "session"
    assert [e["id"] for e in lines[1:]] == zero["ids"] + first["ids"] + second["ids"]
    assert lines[3]["parentId"] == first["ids"][0] and second["leafId"] == second["ids"][0]


async def test_create_session_with_given_id_and_parent(daemons: Daemons, tmp_path: Path) -> None:
    client = await daemons.start()
    session = await call(
        client, "pi/createSession", {"cwd": str(tmp_path), "sessionId": "my-id", "parentSession": "/x/parent.jsonl"}
    )
    assert session["sessionId"] == "my-id" and session["header"]["parentSession"] == "/x/parent.jsonl"


async def test_append_result_and_every_entry_is_on_disk_before_the_reply(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=40)
    client = await daemons.start()
    session = await open_path(client, path)
    sid = session["sessionId"]
    before = read_lines(path)
    for n in range(5):
        result = await call(
            client,
            "pi/append",
            {
                "sessionId": sid,
                "entries": [user_msg(f"question {n}"), assistant_msg(f"answer {n}", input_tokens=1000 + n)],
            },
        )
        assert set(result) == {"ids", "leafId", "contextTokens", "shouldCompact", "estimatedContextTokens",
                               "compaction"}
        assert len(result["ids"]) == 2 and result["leafId"] == result["ids"][-1]
        assert result["contextTokens"] == 1005 + n  # the usage of the last assistant message
        assert result["estimatedContextTokens"] == 1005 + n  # the usage is fresh: the same estimate
        assert result["compaction"] is None
        assert result["shouldCompact"] is False
        lines = read_lines(path)  # read at once: the entries are already there
        assert [e["id"] for e in lines[-2:]] == result["ids"]
        assert lines[-2]["message"]["content"] == f"question {n}"
        assert lines[-1]["parentId"] == result["ids"][0]
        assert all(isinstance(e["timestamp"], str) for e in lines[-2:])
    assert read_lines(path)[: len(before)] == before
    changed = await wait_event(client, "pi/sessionChanged", lambda p: p["reason"] == "append")
    assert changed["sessionId"] == sid


async def test_open_by_path_and_by_session_id_and_duplicate_header_ids(daemons: Daemons, tmp_path: Path) -> None:
    client = await daemons.start()
    daemons.sessions_dir.mkdir(parents=True)
    lines = generated(tmp_path / "src.jsonl", entries=20).read_text()
    header_id = json.loads(lines.splitlines()[0])["id"]
    in_dir = daemons.sessions_dir / f"2025-11-03T09-12-44-318Z_{header_id}.jsonl"
    in_dir.write_text(lines)
    copy = tmp_path / "copy.jsonl"
    copy.write_text(lines)

    by_id = await call(client, "pi/openSession", {"sessionId": header_id})
    assert set(by_id) == SESSION_KEYS
    assert by_id["sessionId"] == header_id and Path(by_id["path"]) == in_dir
    count = len(lines.splitlines()) - 1
    assert by_id["entryCount"] == count and by_id["leafId"] == json.loads(lines.splitlines()[-1])["id"]
    again = await open_path(client, in_dir)  # the same file twice is the same session
    assert again["sessionId"] == header_id
    second = await open_path(client, copy)
    assert second["sessionId"] == f"{header_id}#2"
    third_path = tmp_path / "third.jsonl"
    third_path.write_text(lines)
    assert (await open_path(client, third_path))["sessionId"] == f"{header_id}#3"
    # the keys address different files
    await call(client, "pi/append", {"sessionId": f"{header_id}#2", "entries": [user_msg("only in the copy")]})
    assert len(read_lines(copy)) == count + 2 and len(read_lines(in_dir)) == count + 1


async def test_open_reports_warnings_for_bad_lines_and_v1_files_migrate_in_memory(
    daemons: Daemons, tmp_path: Path, real_session: Path
) -> None:
    client = await daemons.start()
    path = tmp_path / "real.jsonl"
    shutil.copyfile(real_session, path)
    with path.open("a") as f:
        f.write("{not json\n")
    original = path.read_bytes()
    session = await open_path(client, path)
    assert session["entryCount"] == 1002 and session["leafId"] == f"{1002:08x}"
    assert [w["line"] for w in session["warnings"]] == [1004]
    assert path.read_bytes() == original  # loading never rewrites


async def test_close_session_drops_it(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=10)
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    assert await call(client, "pi/closeSession", {"sessionId": sid}) is None
    error = await rpc_error(call(client, "pi/getTree", {"sessionId": sid}))
    assert error.code == -32001 and error.data["reason"] == "unknownSession"
    assert (await open_path(client, path))["sessionId"] == sid  # reopens under the same key


async def test_list_sessions_newest_first(daemons: Daemons, tmp_path: Path) -> None:
    client = await daemons.start()
    ids = {}
    for name, ms in (("old", 1_700_000_000_000), ("new", 1_760_000_000_000), ("mid", 1_730_000_000_000)):
        session = await call(client, "pi/createSession", {"cwd": f"/work/{name}"})
        ids[name] = session["sessionId"]
        user = user_msg(f"{name} first question")
        user["message"]["timestamp"] = ms
        assistant = assistant_msg(f"{name} answer")
        assistant["message"]["timestamp"] = ms + 1
        await call(client, "pi/append", {"sessionId": session["sessionId"], "entries": [user, assistant]})
    listed = (await call(client, "pi/listSessions", {}))["sessions"]
    assert [s["sessionId"] for s in listed] == [ids["new"], ids["mid"], ids["old"]]
    row = listed[0]
    assert {"sessionId", "path", "name", "cwd", "modified", "messageCount", "firstMessage"} <= set(row)
    assert row["cwd"] == "/work/new" and row["messageCount"] == 2 and row["firstMessage"] == "new first question"
    assert row["modified"].startswith("2025-10-09T")
    only = (await call(client, "pi/listSessions", {"cwd": "/work/mid"}))["sessions"]
    assert [s["sessionId"] for s in only] == [ids["mid"]]


# ------------------------------------------------------------------ reads


async def test_get_context_equals_the_cli(daemons: Daemons, tmp_path: Path, real_session: Path) -> None:
    path = tmp_path / "real.jsonl"
    shutil.copyfile(real_session, path)
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    context = await call(client, "pi/getContext", {"sessionId": sid})
    assert set(context) == {"messages", "thinkingLevel", "model", "tokens", "contextWindow", "threshold",
                            "overThreshold"}
    expected = cli_json("context", str(path), "--json")
    assert context["messages"] == expected["messages"]
    assert context == expected
    leaf = f"{500:08x}"
    at = await call(client, "pi/getContext", {"sessionId": sid, "leafId": leaf})
    assert at["messages"] == cli_json("context", str(path), "--leaf", leaf, "--json")["messages"]
    assert len(at["messages"]) < len(context["messages"])


async def test_get_tree_pages_with_total_active_path_and_children(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "b.jsonl", entries=120, shape="branchy", seed=3)
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    whole = await call(client, "pi/getTree", {"sessionId": sid})
    total = whole["total"]
    assert total == len(read_lines(path)) - 1 == len(whole["nodes"])
    node_keys = {"id", "parentId", "type", "role", "preview", "label", "timestamp", "childIds", "onActivePath"}
    assert all(set(n) == node_keys for n in whole["nodes"])
    pages = []
    for offset in range(0, total, 50):
        page = await call(client, "pi/getTree", {"sessionId": sid, "offset": offset, "limit": 50})
        assert page["total"] == total and page["leafId"] == whole["leafId"]
        pages.extend(page["nodes"])
    assert pages == whole["nodes"]
    by_id = {n["id"]: n for n in whole["nodes"]}
    assert any(len(n["childIds"]) > 1 for n in whole["nodes"])  # branchy
    for node in whole["nodes"]:
        for child in node["childIds"]:
            assert by_id[child]["parentId"] == node["id"]
    active, cursor = set(), whole["leafId"]
    while cursor is not None:
        active.add(cursor)
        cursor = by_id[cursor]["parentId"]
    assert {n["id"] for n in whole["nodes"] if n["onActivePath"]} == active
    root = next(n for n in whole["nodes"] if len(n["childIds"]) > 1)
    sub = await call(client, "pi/getTree", {"sessionId": sid, "rootId": root["id"], "limit": 3})
    assert sub["nodes"][0]["id"] == root["id"] and len(sub["nodes"]) == 3 and sub["total"] < total
    empty = await call(client, "pi/getTree", {"sessionId": sid, "offset": total + 5})
    assert empty["nodes"] == [] and empty["total"] == total


async def test_get_entries_by_ids_and_by_range(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=30)
    lines = read_lines(path)[1:]
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    wanted = [lines[5]["id"], lines[2]["id"]]
    got = (await call(client, "pi/getEntries", {"sessionId": sid, "ids": wanted}))["entries"]
    assert got == [lines[5], lines[2]]  # full entries, in the asked order
    ranged = (
        await call(client, "pi/getEntries", {"sessionId": sid, "fromId": lines[3]["id"], "toId": lines[9]["id"]})
    )["entries"]
    assert ranged == lines[3:10]
    everything = (await call(client, "pi/getEntries", {"sessionId": sid}))["entries"]
    assert everything == lines
    error = await rpc_error(call(client, "pi/getEntries", {"sessionId": sid, "ids": ["nope"]}))
    assert error.code == -32002 and error.data["reason"] == "unknownEntry"


async def test_set_label_and_null_clears(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=20)
    target = read_lines(path)[4]["id"]
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    labelled = await call(client, "pi/setLabel", {"sessionId": sid, "entryId": target, "label": "checkpoint"})
    written = read_lines(path)[-1]
    assert written == {**written, "id": labelled["id"], "type": "label", "targetId": target, "label": "checkpoint"}
    tree = await call(client, "pi/getTree", {"sessionId": sid})
    assert next(n for n in tree["nodes"] if n["id"] == target)["label"] == "checkpoint"
    cleared = await call(client, "pi/setLabel", {"sessionId": sid, "entryId": target, "label": None})
    last = read_lines(path)[-1]
    assert last["id"] == cleared["id"] and last["type"] == "label" and last.get("label") is None
    tree = await call(client, "pi/getTree", {"sessionId": sid})
    assert next(n for n in tree["nodes"] if n["id"] == target)["label"] is None


async def test_fork_writes_a_new_file_with_parent_session(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=30)
    lines = read_lines(path)
    cut = next(e for e in lines[10:] if e.get("message", {}).get("role") == "assistant")
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    forked = await call(client, "pi/fork", {"sessionId": sid, "entryId": cut["id"]})
    assert set(forked) == SESSION_KEYS and forked["sessionId"] != sid
    new_path = Path(forked["path"])
    assert new_path != path and new_path.exists() and new_path.parent == path.parent
    assert forked["header"]["parentSession"] == str(path.resolve())
    new_lines = read_lines(new_path)
    assert new_lines[0]["parentSession"] == str(path.resolve())
    upto = lines[1 : lines.index(cut) + 1]
    assert new_lines[1:] == upto and forked["leafId"] == cut["id"]
    assert read_lines(path) == lines  # the source is untouched
    # the fork is open and independent
    await call(client, "pi/append", {"sessionId": forked["sessionId"], "entries": [user_msg("in the fork")]})
    assert len(read_lines(new_path)) == len(new_lines) + 1 and read_lines(path) == lines


async def test_get_stats(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=60)
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    stats = await call(client, "pi/getStats", {"sessionId": sid})
    assert set(stats) >= {
        "tokens",
        "cost",
        "messageCounts",
        "compactions",
        "branchSummaries",
        "contextTokens",
        "contextWindow",
        "contextPercent",
    }
    assert set(stats["tokens"]) == {"input", "output", "cacheRead", "cacheWrite", "total"}
    assert stats["tokens"]["total"] > 0 and stats["compactions"] == 0
    assert stats["contextWindow"] == 200000  # claude-sonnet-4-5 from the built-in table
    assert stats["contextPercent"] == pytest.approx(100 * stats["contextTokens"] / 200000, rel=0.01)
    assert stats == cli_json("stats", str(path), "--json")


async def test_estimate_tokens_of_text_and_session(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=30)
    client = await daemons.start()
    text = await call(client, "pi/estimateTokens", {"text": "x" * 400})
    assert text == {"tokens": 100, "estimator": "pi"}
    sid = (await open_path(client, path))["sessionId"]
    whole = await call(client, "pi/estimateTokens", {"sessionId": sid})
    early = await call(client, "pi/estimateTokens", {"sessionId": sid, "leafId": read_lines(path)[5]["id"]})
    assert 0 < early["tokens"] < whole["tokens"] and whole["estimator"] == "pi"


# ------------------------------------------------------------------ settings


async def test_settings_sources_and_updates(
    daemons: Daemons, tmp_path: Path, isolated_agent_dir: Path, trust_project: Any
) -> None:
    (isolated_agent_dir / "settings.json").write_text(json.dumps({"compaction": {"keepRecentTokens": 111}}))
    project = tmp_path / "proj"
    (project / ".pi").mkdir(parents=True)
    trust_project(project)  # Pi's trust store trusts it: its project settings apply
    (project / ".pi" / "settings.json").write_text(
        json.dumps({"compaction": {"reserveTokens": 222}, "summarizer": {"baseUrl": "http://evil.example/v1"}})
    )
    client = await daemons.start({"branchSummary": {"reserveTokens": 333}})
    sid = (await call(client, "pi/createSession", {"cwd": str(project)}))["sessionId"]
    updated = await call(client, "pi/updateSettings", {"sessionId": sid, "settings": {"tokenizer": "cl100k"}})
    assert updated["settings"]["tokenizer"] == "cl100k"
    got = await call(client, "pi/getSettings", {"sessionId": sid})
    s, sources = got["settings"], got["sources"]
    assert s["compaction"] == {**s["compaction"], "keepRecentTokens": 111, "reserveTokens": 222}
    assert s["branchSummary"]["reserveTokens"] == 333 and s["tokenizer"] == "cl100k"
    assert s["summarizer"]["baseUrl"] is None  # a project cannot redirect the summarizer
    assert sources["compaction.enabled"] == "default"
    assert sources["compaction.keepRecentTokens"] == "global"
    assert sources["compaction.reserveTokens"] == "project"
    assert sources["branchSummary.reserveTokens"] == "initialize"
    assert sources["tokenizer"] == "session"
    assert sources["summarizer.baseUrl"] == "default"
    # without a session: no project and no session layer
    daemon_wide = await call(client, "pi/getSettings", {})
    assert daemon_wide["settings"]["tokenizer"] == "pi" and daemon_wide["sources"]["tokenizer"] == "default"
    assert daemon_wide["sources"]["compaction.reserveTokens"] == "default"
    # a daemon-wide update is merged into the initialize layer
    merged = await call(client, "pi/updateSettings", {"settings": {"compaction": {"keepRecentTokens": 444}}})
    assert merged["settings"]["compaction"]["keepRecentTokens"] == 444
    assert merged["settings"]["branchSummary"]["reserveTokens"] == 333
    got = await call(client, "pi/getSettings", {"sessionId": sid})
    assert got["sources"]["compaction.keepRecentTokens"] == "initialize"
    assert got["settings"]["tokenizer"] == "cl100k"  # the session layer still wins


async def test_did_change_configuration_is_applied(daemons: Daemons, tmp_path: Path) -> None:
    client = await daemons.start({"compaction": {"keepRecentTokens": 1000}})
    client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"pi": {"compaction": {"reserveTokens": 5555}}})
    )
    got = await call(client, "pi/getSettings", {})
    assert got["settings"]["compaction"]["reserveTokens"] == 5555
    assert got["sources"]["compaction.reserveTokens"] == "initialize"
    # the notification replaces the initialize layer
    assert got["settings"]["compaction"]["keepRecentTokens"] == 20000


async def test_settings_validation(daemons: Daemons) -> None:
    client = await daemons.start()
    error = await rpc_error(call(client, "pi/updateSettings", {"settings": {"tokenizer": "nope"}}))
    assert error.code == -32602 and "tokenizer" in str(error)
    assert (await call(client, "pi/getSettings", {}))["settings"]["tokenizer"] == "pi"


# ------------------------------------------------------------------ errors


async def test_error_codes_and_reasons(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=20)
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    original = path.read_bytes()

    error = await rpc_error(call(client, "pi/getContext", {"sessionId": "no-such-session"}))
    assert error.code == -32001 and error.data["reason"] == "unknownSession"
    error = await rpc_error(call(client, "pi/setLabel", {"sessionId": sid, "entryId": "deadbeef", "label": "x"}))
    assert error.code == -32002 and error.data["reason"] == "unknownEntry"
    error = await rpc_error(call(client, "pi/getContext", {"sessionId": sid, "leafId": "deadbeef"}))
    assert error.code == -32002 and error.data["reason"] == "unknownEntry"
    error = await rpc_error(call(client, "pi/fork", {"sessionId": sid, "entryId": "deadbeef"}))
    assert error.code == -32002

    error = await rpc_error(call(client, "pi/append", {"sessionId": sid}))
    assert error.code == -32602 and error.data["reason"] == "invalidParams" and error.data["field"] == "entries"
    assert "entries" in str(error)
    error = await rpc_error(call(client, "pi/append", {"sessionId": sid, "entries": "nope"}))
    assert error.code == -32602 and "entries" in str(error)
    error = await rpc_error(call(client, "pi/append", {"sessionId": sid, "entries": [{"message": {}}]}))
    assert error.code == -32602 and "entries.0.type" in str(error)
    error = await rpc_error(call(client, "pi/getTree", {"sessionId": 42}))
    assert error.code == -32602 and error.data["field"] == "sessionId"
    error = await rpc_error(call(client, "pi/getTree", {"sessionId": sid, "offset": -1}))
    assert error.code == -32602 and "offset" in str(error)
    error = await rpc_error(call(client, "pi/openSession", {"path": str(tmp_path / "missing.jsonl")}))
    assert error.code == -32602 and error.data["path"] == str(tmp_path / "missing.jsonl")
    assert f"cannot open {tmp_path / 'missing.jsonl'}: No such file or directory" in str(error)

    error = await rpc_error(call(client, "pi/openSession", {"sessionId": "no-such-file"}))
    assert error.code == -32001 and error.data["reason"] == "unknownSession"
    error = await rpc_error(call(client, "pi/openSession", {}))
    assert error.code == -32602
    error = await rpc_error(call(client, "pi/noSuchMethod", {}))
    assert error.code == -32601

    empty = await call(client, "pi/createSession", {"cwd": str(tmp_path)})
    error = await rpc_error(call(client, "pi/compact", {"sessionId": empty["sessionId"]}))
    assert error.code == -32004 and error.data["reason"] == "nothingToCompact"

    assert path.read_bytes() == original  # no bad request touched the session
    assert (await call(client, "pi/getTree", {"sessionId": sid, "limit": 1}))["total"] == len(read_lines(path)) - 1


async def test_too_large_entry_is_32008_and_nothing_is_written(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=20)
    before = path.read_bytes()
    client = await daemons.start({"daemon": {"maxMessageBytes": 2000}})
    sid = (await open_path(client, path))["sessionId"]
    error = await rpc_error(
        call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("small"), user_msg("x" * 5000)]})
    )
    assert error.code == -32008 and error.data["reason"] == "tooLarge"
    assert path.read_bytes() == before  # not even the small one
    assert (await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("small")]}))["ids"]


async def test_first_write_to_a_v1_file_rewrites_it_as_v3(daemons: Daemons, tmp_path: Path, real_session: Path) -> None:
    path = tmp_path / "real.jsonl"
    shutil.copyfile(real_session, path)
    migrated = cli_json("tree", str(path), "--json")["entries"]
    client = await daemons.start()
    sid = (await open_path(client, path))["sessionId"]
    result = await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg("after migration")]})
    lines = read_lines(path)
    assert lines[0]["version"] == 3 and lines[1:-1] == migrated
    assert [e["id"] for e in lines[1:4]] == ["00000001", "00000002", "00000003"]
    assert lines[-1]["id"] == result["ids"][0] and lines[-1]["parentId"] == f"{1002:08x}"


async def test_a_second_daemon_writing_the_same_file_is_locked(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=20)
    a = await daemons.start()
    b = await daemons.start()
    sid_a = (await open_path(a, path))["sessionId"]
    sid_b = (await open_path(b, path))["sessionId"]
    await call(a, "pi/append", {"sessionId": sid_a, "entries": [user_msg("from A")]})
    error = await rpc_error(call(b, "pi/append", {"sessionId": sid_b, "entries": [user_msg("from B")]}))
    assert error.code == -32003 and error.data["reason"] == "locked"


async def test_busy_when_two_compactions_of_one_session_run(daemons: Daemons, tmp_path: Path) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=5)
    other_path = generated(tmp_path / "o.jsonl", entries=150, seed=6)
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start({**loopback_settings(loopback.base_url), "compaction": {"keepRecentTokens": 2000}})
        sid = (await open_path(client, path))["sessionId"]
        other = (await open_path(client, other_path))["sessionId"]
        original = path.read_bytes()
        first = send(client, "pi/compact", {"sessionId": sid}, msg_id="first")
        await settle(lambda: loopback.requests, what="the stalled summarizer request")
        error = await rpc_error(call(client, "pi/compact", {"sessionId": sid}))
        assert error.code == -32007 and error.data["reason"] == "busy"
        # reads, appends and other sessions stay responsive while the summary streams
        assert (await call(client, "pi/getTree", {"sessionId": sid, "limit": 1}))["total"] == len(read_lines(path)) - 1
        assert (await call(client, "pi/getStats", {"sessionId": other}))["compactions"] == 0
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="first"))
        with pytest.raises(JsonRpcException) as info:
            await asyncio.wait_for(first, TIMEOUT)
        assert info.value.code == -32800
        assert path.read_bytes() == original


async def test_global_limit_of_concurrent_summaries_is_busy(daemons: Daemons, tmp_path: Path) -> None:
    paths = [generated(tmp_path / f"s{i}.jsonl", entries=150, seed=10 + i) for i in range(2)]
    async with LoopbackProvider() as loopback:
        loopback.set_default(Fault("stall"))
        client = await daemons.start(
            {
                **loopback_settings(loopback.base_url),
                "compaction": {"keepRecentTokens": 2000},
                "daemon": {"maxConcurrentSummaries": 1},
            }
        )
        a, b = [(await open_path(client, p))["sessionId"] for p in paths]
        first = send(client, "pi/compact", {"sessionId": a}, msg_id="a")
        await settle(lambda: loopback.requests, what="the stalled summarizer request")
        error = await rpc_error(call(client, "pi/compact", {"sessionId": b}))
        assert error.code == -32007 and error.data["reason"] == "busy"
        client.protocol.notify("$/cancelRequest", types.CancelParams(id="a"))
        with pytest.raises(JsonRpcException):
            await asyncio.wait_for(first, TIMEOUT)


# ------------------------------------------------------------------ many sessions


async def test_several_sessions_open_at_once(daemons: Daemons, tmp_path: Path) -> None:
    client = await daemons.start({"compaction": {"keepRecentTokens": 500}})
    paths = [generated(tmp_path / f"s{i}.jsonl", entries=20 + 10 * i, seed=i) for i in range(4)]
    opened = [await open_path(client, p) for p in paths]
    assert len({o["sessionId"] for o in opened}) == 4
    created = await call(client, "pi/createSession", {"cwd": str(tmp_path)})
    ids = [o["sessionId"] for o in opened] + [created["sessionId"]]

    async def work(sid: str, n: int) -> Any:
        await call(client, "pi/append", {"sessionId": sid, "entries": [user_msg(f"q{n}"), assistant_msg(f"a{n}")]})
        return await call(client, "pi/getTree", {"sessionId": sid, "limit": 0})

    trees = await asyncio.gather(*(work(sid, n) for n, sid in enumerate(ids)))
    assert [t["total"] for t in trees] == [o["entryCount"] + 2 for o in opened] + [2]
    for path, session in zip(paths, opened, strict=True):
        assert len(read_lines(path)) == session["entryCount"] + 3
    compacted = await call(client, "pi/compact", {"sessionId": ids[3]})
    assert compacted["entry"]["type"] == "compaction"
    assert read_lines(paths[3])[-1] == compacted["entry"]
    assert len(read_lines(paths[2])) == opened[2]["entryCount"] + 3
    stats = await asyncio.gather(*(call(client, "pi/getStats", {"sessionId": sid}) for sid in ids))
    assert [s["compactions"] for s in stats] == [0, 0, 0, 1, 0]
    assert events(client, "pi/compacted")[0]["sessionId"] == ids[3]


async def test_two_daemons_do_not_share_state(daemons: Daemons, tmp_path: Path) -> None:
    a = await daemons.start()
    b = await daemons.start(sessions_dir=tmp_path / "other")
    session = await call(a, "pi/createSession", {"cwd": str(tmp_path)})
    error = await rpc_error(call(b, "pi/getTree", {"sessionId": session["sessionId"]}))
    assert error.code == -32001
    assert os.path.dirname(session["path"]) == str(daemons.sessions_dir)

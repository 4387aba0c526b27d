"""Session methods of the daemon service, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_protocol import methods
from pi_protocol.params import (
    AppendParams,
    CreateSessionParams,
    EstimateTokensParams,
    ForkParams,
    GetContextParams,
    GetEntriesParams,
    GetTreeParams,
    ListSessionsParams,
    OpenSessionParams,
    SessionParams,
    SetLabelParams,
)
from pi_sessiond.errors import InvalidParams, TooLarge, UnknownEntry, UnknownSession

from .fakes import assistant, make_daemon, open_file, session_file, user


def test_open_the_same_path_twice_is_one_session_and_a_copy_gets_a_suffix(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    path = session_file(tmp_path)
    first = daemon.open_session(OpenSessionParams(path=str(path)))
    again = daemon.open_session(OpenSessionParams(path=str(tmp_path / "." / "s.jsonl")))
    assert again.session_id == first.session_id == first.header["id"]
    assert first.entry_count == 60 and first.leaf_id is not None and first.warnings == []
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(path.read_bytes())
    third = tmp_path / "third.jsonl"
    third.write_bytes(path.read_bytes())
    assert open_file(daemon, copy) == first.session_id + "#2"
    assert open_file(daemon, third) == first.session_id + "#3"
    assert daemon.open_session(OpenSessionParams(session_id=first.session_id + "#2")).path == str(copy)


async def test_close_drops_the_session_and_its_key_can_be_reused(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    await daemon.close_session(SessionParams(session_id=sid))
    with pytest.raises(UnknownSession):
        daemon.get_context(GetContextParams(session_id=sid))
    with pytest.raises(UnknownSession):
        await daemon.close_session(SessionParams(session_id=sid))
    assert open_file(daemon, tmp_path / "s.jsonl") == sid


def test_open_errors(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    with pytest.raises(InvalidParams, match="cannot open"):
        daemon.open_session(OpenSessionParams(path=str(tmp_path / "missing.jsonl")))
    with pytest.raises(InvalidParams):
        daemon.open_session(OpenSessionParams())
    with pytest.raises(UnknownSession):
        daemon.open_session(OpenSessionParams(session_id="nope"))


async def test_create_writes_with_the_first_user_message_then_lists_and_reopens_by_id(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    info = daemon.create_session(CreateSessionParams(cwd="/w/proj", session_id="abc"))
    assert info.session_id == "abc" and info.entry_count == 0
    path = Path(info.path or "")
    assert path.parent == tmp_path / "sessions" and path.name.endswith("_abc.jsonl")
    result = await daemon.append(AppendParams(session_id="abc", entries=[user("hello there")]))
    assert path.exists() and result.ids and result.leaf_id == result.ids[0]  # Pi 1.6.0: at the first user message
    result = await daemon.append(AppendParams(session_id="abc", entries=[assistant("hi", total=40)]))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["type"] for r in lines] == ["session", "message", "message"]
    assert lines[2]["id"] == result.leaf_id and lines[2]["parentId"] == lines[1]["id"]
    assert result.context_tokens == 40 and result.should_compact is False
    assert events.of(methods.SESSION_CHANGED)[-1] == {"sessionId": "abc", "leafId": result.leaf_id,
                                                      "reason": "append"}
    listed = daemon.list_sessions(ListSessionsParams(cwd="/w/proj")).sessions
    assert [s.session_id for s in listed] == ["abc"] and listed[0].first_message == "hello there"
    assert listed[0].message_count == 2
    assert daemon.list_sessions(ListSessionsParams(cwd="/elsewhere")).sessions == []
    await daemon.close_session(SessionParams(session_id="abc"))
    again = daemon.open_session(OpenSessionParams(session_id="abc"))
    assert again.path == str(path) and again.entry_count == 2


def test_create_without_sessions_dir_uses_pis_layout(tmp_path: Path, isolated_agent_dir: Path) -> None:
    from pi_sessiond.service.daemon import Daemon

    from .fakes import Events, Hooks

    daemon = Daemon(events=Events(), hooks=Hooks())
    info = daemon.create_session(CreateSessionParams(cwd="/w/proj"))
    assert Path(info.path or "").parent == isolated_agent_dir / "sessions" / "--w-proj--"


async def test_append_validates_entries_and_writes_nothing_on_error(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    bad = {"type": "message", "message": {"role": "user", "content": 5}}
    with pytest.raises(InvalidParams, match=r"entries\.1\.message\.content"):
        await daemon.append(AppendParams(session_id=sid, entries=[user("ok"), bad]))
    with pytest.raises(InvalidParams, match=r"entries\.0\.type"):
        await daemon.append(AppendParams(session_id=sid, entries=[{"type": "session"}]))
    with pytest.raises(InvalidParams, match=r"entries\.0\.targetId"):
        await daemon.append(AppendParams(session_id=sid, entries=[{"type": "label"}]))
    assert path.read_bytes() == before
    result = await daemon.append(AppendParams(session_id=sid, entries=[{"type": "future_thing", "x": [1]}]))
    last = json.loads(path.read_text().splitlines()[-1])
    assert last["type"] == "future_thing" and last["x"] == [1] and last["id"] == result.ids[0]


async def test_append_too_large(tmp_path: Path) -> None:
    from pi_protocol.params import UpdateSettingsParams

    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    daemon.update_settings(UpdateSettingsParams(session_id=sid, settings={"daemon": {"maxMessageBytes": 100}}))
    with pytest.raises(TooLarge):
        await daemon.append(AppendParams(session_id=sid, entries=[user("x" * 200)]))


async def test_context_tokens_never_count_usage_from_before_the_newest_compaction(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    from pi_protocol.params import CompactParams

    from .fakes import Progress

    await daemon.compact(CompactParams(session_id=sid), Progress())
    context = daemon.get_context(GetContextParams(session_id=sid))
    assert context.messages[0]["role"] == "compactionSummary"
    # Kept assistant messages still carry their old usage; the size must be an estimate of everything.
    from pi_sessiond.compaction.tokens import estimate_tokens

    estimated = sum(estimate_tokens(m) for m in context.messages)
    assert context.tokens == estimated
    result = await daemon.append(AppendParams(session_id=sid, entries=[user("more")]))
    assert result.context_tokens == estimated + estimate_tokens(user("more")["message"])
    stats = daemon.get_stats(SessionParams(session_id=sid))
    assert stats.context_tokens is None and stats.context_percent is None and stats.compactions == 1
    assert stats.estimated_context_tokens == result.estimated_context_tokens == result.context_tokens  # the ~N
    result = await daemon.append(AppendParams(session_id=sid, entries=[assistant("fresh", total=777)]))
    assert result.context_tokens == result.estimated_context_tokens == 777
    stats = daemon.get_stats(SessionParams(session_id=sid))
    assert stats.context_tokens == 777 and stats.context_window == 200000
    assert stats.context_percent == pytest.approx(777 / 200000 * 100)


async def test_tree_entries_labels_and_fork(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    full = daemon.get_tree(GetTreeParams(session_id=sid))
    assert full.total == 60 and len(full.nodes) == 60 and all(n.on_active_path for n in full.nodes)
    assert full.nodes[0].parent_id is None and full.nodes[0].child_ids == [full.nodes[1].id]
    assert all(len(n.preview) <= 120 for n in full.nodes)
    roles = {n.role for n in full.nodes}
    assert {"user", "assistant"} <= roles and None in roles
    page = daemon.get_tree(GetTreeParams(session_id=sid, offset=10, limit=5))
    assert [n.id for n in page.nodes] == [n.id for n in full.nodes[10:15]] and page.total == 60
    ids = [n.id for n in full.nodes]
    sub = daemon.get_tree(GetTreeParams(session_id=sid, root_id=ids[50]))
    assert sub.total == 10 and sub.nodes[0].id == ids[50]
    with pytest.raises(UnknownEntry):
        daemon.get_tree(GetTreeParams(session_id=sid, root_id="zzz"))

    got = daemon.get_entries(GetEntriesParams(session_id=sid, ids=[ids[3], ids[1]])).entries
    assert [e["id"] for e in got] == [ids[3], ids[1]]
    with pytest.raises(UnknownEntry):
        daemon.get_entries(GetEntriesParams(session_id=sid, ids=["nope"]))
    segment = daemon.get_entries(GetEntriesParams(session_id=sid, from_id=ids[5], to_id=ids[8])).entries
    assert [e["id"] for e in segment] == ids[5:9]
    assert len(daemon.get_entries(GetEntriesParams(session_id=sid)).entries) == 60

    label = daemon.set_label(SetLabelParams(session_id=sid, entry_id=ids[4], label="here"))
    tree = daemon.get_tree(GetTreeParams(session_id=sid))
    assert tree.leaf_id == label.id and next(n for n in tree.nodes if n.id == ids[4]).label == "here"
    assert events.of(methods.SESSION_CHANGED)[-1]["reason"] == "label"
    daemon.set_label(SetLabelParams(session_id=sid, entry_id=ids[4], label=None))
    assert next(n for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes if n.id == ids[4]).label is None
    with pytest.raises(UnknownEntry):
        daemon.set_label(SetLabelParams(session_id=sid, entry_id="nope", label="x"))

    daemon.set_label(SetLabelParams(session_id=sid, entry_id=ids[2], label="keep"))
    forked = daemon.fork(ForkParams(session_id=sid, entry_id=ids[9]))
    assert forked.session_id != sid and forked.path and Path(forked.path).parent == tmp_path
    assert forked.header["parentSession"] == str((tmp_path / "s.jsonl").resolve())
    entries = daemon.get_entries(GetEntriesParams(session_id=forked.session_id)).entries
    assert [e["id"] for e in entries][:10] == ids[:10] and entries[-1]["type"] == "label"
    with pytest.raises(UnknownEntry):
        daemon.fork(ForkParams(session_id=sid, entry_id="nope"))


def test_stats_and_estimates(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    stats = daemon.get_stats(SessionParams(session_id=sid))
    counts = stats.message_counts
    assert counts["totalMessages"] == counts["userMessages"] + counts["assistantMessages"] + counts["toolResults"]
    assert counts["toolCalls"] >= counts["toolResults"] > 0
    assert stats.tokens.total == (stats.tokens.input + stats.tokens.output + stats.tokens.cache_read
                                  + stats.tokens.cache_write) > 0
    assert stats.cost > 0 and stats.compactions == 0 and stats.context_tokens == 15399
    estimate = daemon.estimate_tokens(EstimateTokensParams(text="abcdefgh"))
    assert (estimate.tokens, estimate.estimator) == (2, "pi")
    leaf = daemon.estimate_tokens(EstimateTokensParams(session_id=sid))
    assert leaf.tokens == 15399
    ids = [n.id for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes]
    early = daemon.estimate_tokens(EstimateTokensParams(session_id=sid, leaf_id=ids[3]))
    assert 0 < early.tokens < 15399
    assert daemon.get_context(GetContextParams(session_id=sid, leaf_id=ids[3])).tokens == early.tokens
    with pytest.raises(InvalidParams):
        daemon.estimate_tokens(EstimateTokensParams())
    with pytest.raises(UnknownEntry):
        daemon.estimate_tokens(EstimateTokensParams(session_id=sid, leaf_id="nope"))


async def test_several_sessions_at_once_stay_apart(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    a = open_file(daemon, session_file(tmp_path, "a.jsonl", seed=1))
    b = open_file(daemon, session_file(tmp_path, "b.jsonl", seed=2))
    assert a != b
    await daemon.append(AppendParams(session_id=a, entries=[user("only in a")]))
    assert daemon.get_context(GetContextParams(session_id=a)).messages[-1]["content"] == "only in a"
    assert daemon.get_context(GetContextParams(session_id=b)).messages[-1]["role"] == "assistant"

"""pi/navigateTree through the service: Pi's landing rules, summaries, hooks, conflicts."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pi_protocol import methods
from pi_protocol.params import AppendParams, GetTreeParams, NavigateTreeParams
from pi_sessiond.compaction.branch import prepare_branch_entries
from pi_sessiond.errors import Busy, Conflict, Rejected, UnknownEntry
from pi_sessiond.service.daemon import Daemon
from pi_sessiond.store.entry import Entry
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult

from .fakes import Counting, Gate, Hooks, Progress, make_daemon, open_file, session_file, user


def node_ids(daemon: Daemon, sid: str) -> list[str]:
    return [n.id for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes]


def roles(daemon: Daemon, sid: str) -> dict[str, str | None]:
    return {n.id: n.role for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes}


async def test_navigate_without_summary_writes_nothing_and_returns_editor_text(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    ids = node_ids(daemon, sid)
    user_id = next(i for i in ids[10:] if roles(daemon, sid)[i] == "user")
    result = await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=user_id), Progress())
    parent = json.loads(path.read_text().splitlines()[ids.index(user_id) + 1])["parentId"]
    assert result.leaf_id == parent and result.editor_text and result.entry is None and not result.cancelled
    assert path.read_bytes() == before
    assert events.of(methods.TREE_NAVIGATED) == [{"sessionId": sid, "oldLeafId": ids[-1], "leafId": parent}]
    assert events.of(methods.SESSION_CHANGED)[-1]["reason"] == "navigate"
    # The target being the leaf: nothing at all.
    count = len(events.sent)
    same = await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=parent), Progress())
    assert same.leaf_id == parent and len(events.sent) == count
    with pytest.raises(UnknownEntry):
        await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id="nope"), Progress())


async def test_navigate_with_summary_and_label(tmp_path: Path) -> None:
    seen: list[dict[str, object]] = []

    def review(payload: dict[str, object]) -> object:
        seen.append(payload)
        return {"action": "accept"}

    daemon, events = make_daemon(tmp_path, hooks=Hooks(reviewSummary=review))
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = node_ids(daemon, sid)
    target = next(i for i in ids[20:] if roles(daemon, sid)[i] == "assistant")
    progress = Progress()
    result = await daemon.navigate_tree(
        NavigateTreeParams(session_id=sid, target_id=target, summarize=True, label="back", work_done_token=3),
        progress)
    entry = result.entry
    assert entry is not None and entry["type"] == "branch_summary" and entry["parentId"] == target
    assert entry["fromId"] == ids[-1] and entry["fromHook"] is False
    assert str(entry["summary"]).startswith("The user explored a different conversation branch")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[-2] == entry and rows[-1]["type"] == "label" and rows[-1]["targetId"] == entry["id"]
    assert result.leaf_id == rows[-1]["id"]
    assert progress.bars[0].token == 3 and progress.bars[0].ends == ["done"]
    assert seen[0]["kind"] == "branchSummary"
    assert events.of(methods.TREE_NAVIGATED)[0]["entry"] == entry


async def test_before_tree_cancel_and_supplied_summary(tmp_path: Path) -> None:
    hooks = Hooks(beforeTree={"cancel": True})
    daemon, events = make_daemon(tmp_path, hooks=hooks)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = node_ids(daemon, sid)
    before = path.read_bytes()
    result = await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True),
                                        Progress())
    assert result.cancelled and result.leaf_id == ids[-1] and path.read_bytes() == before and events.sent == []
    payload = hooks.calls[0][1]
    assert payload["targetId"] == ids[20] and payload["oldLeafId"] == ids[-1] and payload["userWantsSummary"]
    assert payload["commonAncestorId"] == ids[20] and len(payload["entriesToSummarize"]) == 39

    summarizer = Counting()
    hooks = Hooks(beforeTree={"summary": {"summary": "from the client", "details": [1]}})
    daemon, _ = make_daemon(tmp_path, hooks=hooks, summarizer=summarizer)
    sid = open_file(daemon, session_file(tmp_path, "b.jsonl"))
    ids = node_ids(daemon, sid)
    plain = await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[30]), Progress())
    assert plain.entry is None  # a hook summary is used only when a summary was asked for
    result = await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True),
                                        Progress())
    assert result.entry is not None and result.entry["summary"] == "from the client"
    assert result.entry["fromHook"] is True and result.entry["details"] == [1] and summarizer.calls == 0


async def test_review_reject_leaves_the_leaf(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path, hooks=Hooks(reviewSummary={"action": "reject"}))
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = node_ids(daemon, sid)
    before = path.read_bytes()
    with pytest.raises(Rejected):
        await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True), Progress())
    assert path.read_bytes() == before and daemon.registry.get(sid).session.leaf_id == ids[-1]


async def test_branch_summary_is_a_job_and_a_moved_leaf_is_a_conflict(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _ = make_daemon(tmp_path, summarizer=gate)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = node_ids(daemon, sid)
    running = asyncio.create_task(
        daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True), Progress()))
    await gate.started.wait()
    with pytest.raises(Busy):
        await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[10], summarize=True), Progress())
    await daemon.append(AppendParams(session_id=sid, entries=[user("meanwhile")]))
    before = path.read_bytes()
    gate.release.set()
    with pytest.raises(Conflict):
        await running
    assert path.read_bytes() == before


class _Recording(Counting):
    """The offline summarizer, keeping every request it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[SummaryRequest] = []

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.requests.append(request)
        return await super().summarize(request, progress=progress)


async def test_the_branch_shown_to_before_tree_is_the_branch_summarized(tmp_path: Path) -> None:
    hooks = Hooks(beforeTree=None)
    summarizer = _Recording()
    daemon, _ = make_daemon(tmp_path, hooks=hooks, summarizer=summarizer)
    sid = open_file(daemon, session_file(tmp_path))
    ids = node_ids(daemon, sid)
    await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True), Progress())
    shown = [Entry.from_data(e) for e in hooks.calls[0][1]["entriesToSummarize"]]
    assert [e.id for e in shown] == ids[21:]
    budget = summarizer.context_window - daemon.settings.settings().branch_summary.reserve_tokens
    [request] = summarizer.requests
    assert request.purpose == "branch"
    assert list(request.messages) == list(prepare_branch_entries(shown, budget).messages)


async def test_a_leaf_moved_while_before_tree_is_asked_is_a_conflict(tmp_path: Path) -> None:
    held: list[Daemon] = []

    async def append_meanwhile(payload: dict[str, object]) -> None:
        await held[0].append(AppendParams(session_id=str(payload["sessionId"]), entries=[user("meanwhile")]))

    summarizer = Counting()
    daemon, events = make_daemon(tmp_path, hooks=Hooks(beforeTree=append_meanwhile), summarizer=summarizer)
    held.append(daemon)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = node_ids(daemon, sid)
    with pytest.raises(Conflict):
        await daemon.navigate_tree(NavigateTreeParams(session_id=sid, target_id=ids[20], summarize=True), Progress())
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert rows[-1]["message"]["content"] == "meanwhile" and rows[-1]["parentId"] == ids[-1]
    assert daemon.registry.get(sid).session.leaf_id == rows[-1]["id"]
    assert events.of(methods.TREE_NAVIGATED) == []

"""The daemon as an agent's context engine, in process: auto-compaction without usage, more than once per
turn, the loop guard, the append's ``compaction``, getContext's window fields and wait, reportOverflow."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest

from pi_protocol import methods
from pi_protocol.params import (
    AppendParams,
    CreateSessionParams,
    GetContextParams,
    GetSettingsParams,
    ReportOverflowParams,
    UpdateSettingsParams,
)
from pi_sessiond.errors import Conflict, InvalidParams, NothingToCompact

from .fakes import Gate, Hooks, Progress, assistant, make_daemon, user

WINDOW = {"contextWindow": 24000, "compaction": {"keepRecentTokens": 4800}}


def bare_assistant(text: str, call: str | None = None) -> dict[str, Any]:
    """An agent's answer without ``usage`` (optionally calling a tool)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    if call is not None:
        content.append({"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "a.txt"}})
    return {"type": "message", "message": {"role": "assistant", "content": content, "stopReason": "toolUse"}}


def tool_result(call: str, chars: int) -> dict[str, Any]:
    return {"type": "message", "message": {"role": "toolResult", "toolCallId": call, "toolName": "read",
                                           "content": [{"type": "text", "text": "x" * chars}], "isError": False}}


def agent_daemon(tmp_path: Path, **kwargs: Any) -> tuple[Any, Any, str]:
    daemon, events = make_daemon(tmp_path, **kwargs)
    daemon.update_settings(UpdateSettingsParams(settings=WINDOW))
    sid = daemon.create_session(CreateSessionParams(cwd=str(tmp_path))).session_id
    return daemon, events, sid


async def compacting(daemon: Any, sid: str) -> int:
    """A user message, then tool steps until an automatic compaction runs; the number of steps."""
    await daemon.append(AppendParams(session_id=sid, entries=[user("go")]))
    step = 0
    while daemon.jobs.get(sid) is None:
        step += 1
        await daemon.append(AppendParams(session_id=sid, entries=[
            bare_assistant("s", f"c{step}"), tool_result(f"c{step}", 8000)]))
    return step


async def settle(daemon: Any, sid: str) -> None:
    job = daemon.jobs.get(sid)
    if job is not None:
        await asyncio.wait([job.task])


async def test_fix_without_usage_the_estimate_compacts_on_tool_results_more_than_once_per_turn(tmp_path: Path) -> None:
    daemon, events, sid = agent_daemon(tmp_path)
    await daemon.append(AppendParams(session_id=sid, entries=[user("plant: the code word is HERON")]))
    started = []
    for step in range(40):
        entries = [bare_assistant(f"step {step}", f"c{step}"), tool_result(f"c{step}", 8000)]
        result = await daemon.append(AppendParams(session_id=sid, entries=entries))
        context = daemon.get_context(GetContextParams(session_id=sid))
        assert context.context_window == 24000 and context.threshold == 24000 - 4000
        assert context.over_threshold == (context.tokens > context.threshold) == result.should_compact
        if result.compaction is not None and result.compaction.started:
            assert result.compaction.reason == "threshold" and result.compaction.job_id
            started.append(step)
        await settle(daemon, sid)
        assert daemon.get_context(GetContextParams(session_id=sid)).tokens <= 24000
    assert len(started) >= 3  # one user turn, several automatic compactions
    assert len(events.of(methods.COMPACTION_STARTED)) == len(events.of(methods.COMPACTION_ENDED)) == len(started)


async def test_auto_per_turn_limits_and_a_user_message_resets(tmp_path: Path) -> None:
    daemon, _events, sid = agent_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"autoPerTurn": 1}}))
    await daemon.append(AppendParams(session_id=sid, entries=[user("go")]))
    outcomes = []
    for step in range(20):
        result = await daemon.append(AppendParams(session_id=sid, entries=[
            bare_assistant("s", f"c{step}"), tool_result(f"c{step}", 8000)]))
        outcomes.append(result.compaction)
        await settle(daemon, sid)
    assert sum(1 for c in outcomes if c is not None and c.started) == 1
    assert any(c is not None and not c.started for c in outcomes)  # reached, not started: the limit
    result = await daemon.append(AppendParams(session_id=sid, entries=[user("next turn " + "y" * 4000)]))
    assert result.compaction is not None and result.compaction.started


async def test_the_loop_guard_waits_for_growth_after_a_compaction_that_wrote_nothing(tmp_path: Path) -> None:
    daemon, events, sid = agent_daemon(tmp_path, hooks=Hooks(beforeCompact={"cancel": True}))
    await daemon.append(AppendParams(session_id=sid, entries=[user("go")]))
    started = []
    for step in range(40):
        result = await daemon.append(AppendParams(session_id=sid, entries=[
            bare_assistant("s", f"c{step}"), tool_result(f"c{step}", 4000)]))  # ~1,000 tokens a step
        if result.compaction is not None and result.compaction.started:
            started.append(step)
        await settle(daemon, sid)
    # Each attempt is refused; the next waits until the context grew by a tenth of the window (2,400 tokens).
    assert len(started) >= 2 and all(later - earlier >= 3 for earlier, later in itertools.pairwise(started))
    assert len(events.of(methods.COMPACTION_FAILED)) == len(started)
    await daemon.append(AppendParams(session_id=sid, entries=[user("a new turn")]))
    assert daemon.registry.get(sid).auto_stalled is None


async def test_pi_rule_is_kept_for_messages_with_usage(tmp_path: Path) -> None:
    daemon, _events, sid = agent_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"reserveTokens": 4000}}))
    await daemon.append(AppendParams(session_id=sid, entries=[user("go"), assistant("a", total=500)]))
    # A big tool result after an answer with usage: Pi checks only answers, by their own usage.
    result = await daemon.append(AppendParams(session_id=sid, entries=[tool_result("c", 90000)]))
    assert result.should_compact is True and result.compaction is None
    result = await daemon.append(AppendParams(session_id=sid, entries=[assistant("b", total=21000)]))
    assert result.compaction is not None and result.compaction.started
    await settle(daemon, sid)
    result = await daemon.append(AppendParams(session_id=sid, entries=[assistant("c", total=21000)]))
    assert result.compaction is not None and not result.compaction.started  # one per turn


async def test_get_context_waits_for_a_running_compaction(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _events, sid = agent_daemon(tmp_path, summarizer=gate)
    await compacting(daemon, sid)
    waiting = asyncio.create_task(daemon.compaction_settled(GetContextParams(session_id=sid, wait_for_compaction=True)))
    await gate.started.wait()
    assert not waiting.done()
    gate.release.set()
    await asyncio.wait_for(waiting, 30)
    context = daemon.get_context(GetContextParams(session_id=sid))
    assert context.messages[0]["role"] == "compactionSummary" and not context.over_threshold


async def test_report_overflow_waits_then_answers_already_fits(tmp_path: Path) -> None:
    gate = Gate()
    daemon, events, sid = agent_daemon(tmp_path, summarizer=gate)
    await compacting(daemon, sid)
    report = asyncio.create_task(daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress()))
    await gate.started.wait()
    await asyncio.sleep(0)
    assert not report.done()  # waiting, not busy
    gate.release.set()
    result = await asyncio.wait_for(report, 30)
    assert result.already_fits is True and result.entry["type"] == "compaction"
    assert len(events.of(methods.COMPACTION_STARTED)) == 1  # nothing more was done
    # The same compaction is relied on once: the next report compacts (Pi's one attempt), the third is refused.
    for more in range(3):
        await daemon.append(AppendParams(session_id=sid, entries=[
            bare_assistant("s", f"d{more}"), tool_result(f"d{more}", 8000)]))
    second = await daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress())
    assert second.already_fits is False and second.entry["id"] != result.entry["id"]
    with pytest.raises(NothingToCompact):
        await daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress())
    assert len(events.of(methods.COMPACTION_STARTED)) == len(events.of(methods.COMPACTION_ENDED)) == 2


async def test_cancelling_a_waiting_report_leaves_the_compaction_running(tmp_path: Path) -> None:
    gate = Gate()
    daemon, events, sid = agent_daemon(tmp_path, summarizer=gate)
    await compacting(daemon, sid)
    report = asyncio.create_task(daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress()))
    await gate.started.wait()
    report.cancel()
    with pytest.raises(asyncio.CancelledError):
        await report
    job = daemon.jobs.get(sid)
    assert job is not None and not job.task.done()
    gate.release.set()
    await asyncio.wait([job.task])
    assert events.of(methods.COMPACTION_ENDED)[-1].get("entry")


def test_a_window_alone_scales_the_budgets_and_a_contradiction_names_both_keys(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"contextWindow": 24000}))
    compaction = daemon.get_settings(GetSettingsParams()).settings["compaction"]
    assert compaction["reserveTokens"] == 4000 and compaction["masking"]["olderThanTokens"] == 4800
    assert compaction["keepRecentTokens"] == 2000  # set by a layer: kept
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"reserveTokens": 16384,
                                                                         "keepRecentTokens": 20000}}))
    (issue,) = daemon.get_settings(GetSettingsParams()).errors or []
    assert "compaction.reserveTokens" in issue.message and "compaction.keepRecentTokens" in issue.message
    daemon.update_settings(UpdateSettingsParams(settings={"contextWindow": 200000}))
    assert not daemon.get_settings(GetSettingsParams()).errors


async def test_an_append_retried_under_its_own_ids_writes_nothing_and_other_content_is_a_conflict(
    tmp_path: Path,
) -> None:
    daemon, _, sid = agent_daemon(tmp_path)
    entries = [{**user("hello"), "id": "turn-1-user"}, {**bare_assistant("hi"), "id": "turn-1-answer"}]
    first = await daemon.append(AppendParams(session_id=sid, entries=entries))
    assert first.ids == ["turn-1-user", "turn-1-answer"]
    path = Path(daemon.registry.get(sid).session.path)
    written = path.read_bytes()
    again = await daemon.append(AppendParams(session_id=sid, entries=entries))
    assert again.ids == first.ids and path.read_bytes() == written
    lines = [line for line in written.decode().splitlines() if '"turn-1-answer"' in line]
    assert len(lines) == 1 and '"parentId":"turn-1-user"' in lines[0]
    with pytest.raises(Conflict, match=r"entries\.0\.id"):
        await daemon.append(AppendParams(session_id=sid, entries=[{**user("other"), "id": "turn-1-user"}]))
    with pytest.raises(Conflict, match=r"entries\.1\.id"):
        await daemon.append(AppendParams(session_id=sid, entries=[entries[0], {**user("new"), "id": "fresh"}]))
    with pytest.raises(InvalidParams, match=r"entries\.1\.id"):
        await daemon.append(AppendParams(session_id=sid, entries=[{**user("a"), "id": "x"}, {**user("b"), "id": "x"}]))
    assert path.read_bytes() == written


async def test_appends_during_a_compaction_do_not_arm_the_loop_guard(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _, sid = agent_daemon(tmp_path, summarizer=gate)
    step = await compacting(daemon, sid)
    await gate.started.wait()
    for _ in range(12):  # the context grows past the threshold again while the summary is made
        step += 1
        result = await daemon.append(AppendParams(session_id=sid, entries=[
            bare_assistant("s", f"c{step}"), tool_result(f"c{step}", 8000)]))
        assert result.compaction is not None and not result.compaction.started  # the running job
    gate.release.set()
    await settle(daemon, sid)
    step += 1
    result = await daemon.append(AppendParams(session_id=sid, entries=[
        bare_assistant("s", f"c{step}"), tool_result(f"c{step}", 8000)]))
    assert result.compaction is not None and result.compaction.started

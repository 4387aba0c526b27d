"""pi/compact, pi/reportOverflow and auto-compaction through the service, with the offline summarizer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pi_protocol import methods
from pi_protocol.params import (
    AppendParams,
    CompactParams,
    GetContextParams,
    GetTreeParams,
    ReportOverflowParams,
    SessionParams,
    UpdateSettingsParams,
)
from pi_sessiond.errors import Busy, Conflict, NothingToCompact, Rejected, SummarizerFailed
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.errors import SummarizerError
from pi_sessiond.summarizers.offline import OfflineSummarizer

from .fakes import HANG, Counting, Gate, Hooks, Progress, assistant, make_daemon, open_file, session_file, user

# A 20k window with Pi's own reserve (an unset reserve would follow the window).
PI_WINDOW_20K = {"contextWindow": 20000, "compaction": {"reserveTokens": 16384}}


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_compact_writes_one_entry_with_progress_and_notifications(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    progress = Progress()
    result = await daemon.compact(CompactParams(session_id=sid, work_done_token="tok"), progress)
    rows = lines(path)
    assert len(rows) == 62 and rows[-1] == result.entry and rows[-1]["fromHook"] is False
    assert result.tokens_before == 15399 > result.tokens_after
    (bar,) = progress.bars
    assert bar.token == "tok" and bar.title == "Compacting session" and bar.ends == ["done"]
    phases = [m for m, _ in bar.reports]
    assert phases[0] == "preparing" and "writing" in phases and phases[-1] == "done"
    assert any(m.startswith("summarizing ") for m in phases)
    assert events.methods() == [methods.COMPACTED, methods.SESSION_CHANGED]
    assert events.of(methods.COMPACTED)[0] == {"sessionId": sid, "entry": result.entry, "reason": "manual"}
    with pytest.raises(NothingToCompact, match="Already compacted"):
        await daemon.compact(CompactParams(session_id=sid), Progress())


async def test_nothing_to_compact_and_summarizer_failure_write_nothing(tmp_path: Path) -> None:
    class Failing(OfflineSummarizer):
        async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None
                            ) -> SummaryResult:
            raise SummarizerError("provider said no", status=529)

    daemon, _ = make_daemon(tmp_path, summarizer=Failing())
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    progress = Progress()
    with pytest.raises(SummarizerFailed) as failed:
        await daemon.compact(CompactParams(session_id=sid), progress)
    assert failed.value.data == {"status": 529, "message": "provider said no"}
    assert progress.bars[0].ends == ["failed"] and path.read_bytes() == before
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"keepRecentTokens": 100000}}))
    with pytest.raises(NothingToCompact):
        await daemon.compact(CompactParams(session_id=sid), Progress())
    assert path.read_bytes() == before


async def test_busy_per_session_and_global_limit_while_reads_and_appends_go_on(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _ = make_daemon(tmp_path, summarizer=gate)
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"maxConcurrentSummaries": 1}}))
    a = open_file(daemon, session_file(tmp_path, "a.jsonl", seed=1))
    b = open_file(daemon, session_file(tmp_path, "b.jsonl", seed=2))
    running = asyncio.create_task(daemon.compact(CompactParams(session_id=a), Progress()))
    await gate.started.wait()
    job = daemon.jobs.get(a)
    assert job is not None and (job.kind, job.reason, job.state) == ("compaction", "manual", "running")
    with pytest.raises(Busy):
        await daemon.compact(CompactParams(session_id=a), Progress())
    with pytest.raises(Busy, match="maxConcurrentSummaries"):
        await daemon.compact(CompactParams(session_id=b), Progress())
    assert daemon.get_context(GetContextParams(session_id=a)).messages
    await daemon.append(AppendParams(session_id=a, entries=[user("while it runs")]))
    gate.release.set()
    result = await running
    assert daemon.jobs.get(a) is None
    # The append continued the prepared branch: the compaction sits under it and keeps it.
    context = daemon.get_context(GetContextParams(session_id=a)).messages
    assert context[0]["role"] == "compactionSummary" and context[-1]["content"] == "while it runs"
    assert result.entry["parentId"] == daemon.get_tree(GetTreeParams(session_id=a)).nodes[-2].id


async def test_leaf_moved_to_another_branch_is_a_conflict_and_nothing_is_written(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _ = make_daemon(tmp_path, summarizer=gate)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    ids = [n.id for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes]
    running = asyncio.create_task(daemon.compact(CompactParams(session_id=sid), Progress()))
    await gate.started.wait()
    daemon.registry.get(sid).session.set_leaf(ids[40])
    await daemon.append(AppendParams(session_id=sid, entries=[user("another branch")]))
    before = path.read_bytes()
    gate.release.set()
    with pytest.raises(Conflict):
        await running
    assert path.read_bytes() == before and not any(r["type"] == "compaction" for r in lines(path))


async def test_cancelling_the_request_cancels_the_job_and_writes_nothing(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _ = make_daemon(tmp_path, summarizer=gate)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    progress = Progress()
    running = asyncio.create_task(daemon.compact(CompactParams(session_id=sid), progress))
    await gate.started.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert daemon.jobs.get(sid) is None and progress.bars[0].ends == ["cancelled"]
    assert path.read_bytes() == before


def threshold_daemon(tmp_path: Path, **kwargs: object) -> tuple[object, object, str, Path]:
    daemon, events = make_daemon(tmp_path, **kwargs)  # type: ignore[arg-type]
    daemon.update_settings(UpdateSettingsParams(settings=PI_WINDOW_20K))
    path = session_file(tmp_path)
    return daemon, events, open_file(daemon, path), path


async def test_auto_compaction_on_threshold_with_notifications_in_order_and_a_loop_guard(tmp_path: Path) -> None:
    summarizer = Counting()
    daemon, events = make_daemon(tmp_path, summarizer=summarizer)
    daemon.update_settings(UpdateSettingsParams(settings=PI_WINDOW_20K))
    sid = open_file(daemon, session_file(tmp_path))
    result = await daemon.append(AppendParams(session_id=sid, entries=[user("go on")]))
    assert result.should_compact is True and daemon.jobs.get(sid) is None  # no assistant yet: no check
    result = await daemon.append(AppendParams(session_id=sid, entries=[assistant("done", total=19000)]))
    assert result.should_compact is True and result.context_tokens == 19000
    job = daemon.jobs.get(sid)
    assert job is not None and job.reason == "threshold"
    await job.task
    assert events.methods()[-5:] == [methods.SESSION_CHANGED, methods.COMPACTION_STARTED, methods.COMPACTED,
                                     methods.SESSION_CHANGED, methods.COMPACTION_ENDED]
    assert events.of(methods.COMPACTION_STARTED) == [{"sessionId": sid, "reason": "threshold", "willRetry": False}]
    (ended,) = events.of(methods.COMPACTION_ENDED)
    assert ended["entry"]["type"] == "compaction" and "error" not in ended
    assert events.of(methods.COMPACTED)[0]["reason"] == "threshold" and summarizer.calls >= 1
    # Still above the threshold in the same turn: no second automatic compaction.
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("again", total=19500)]))
    assert daemon.jobs.get(sid) is None
    # A new user message starts a new turn.
    await daemon.append(AppendParams(session_id=sid, entries=[user("next"), assistant("big", total=19600)]))
    job = daemon.jobs.get(sid)
    assert job is not None
    await job.task
    assert len(events.of(methods.COMPACTION_STARTED)) == 2


async def test_no_auto_compaction_when_disabled_aborted_or_below(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings=PI_WINDOW_20K))
    sid = open_file(daemon, session_file(tmp_path))
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("x", total=19000, stop="aborted")]))
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("x", total=100)]))
    daemon.update_settings(UpdateSettingsParams(session_id=sid, settings={"compaction": {"enabled": False}}))
    result = await daemon.append(AppendParams(session_id=sid, entries=[assistant("x", total=19000)]))
    assert result.should_compact is False and daemon.jobs.get(sid) is None
    assert methods.COMPACTION_STARTED not in events.methods()


async def test_failed_auto_compaction_reports_an_error(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path, hooks=Hooks(beforeCompact={"cancel": True}))
    daemon.update_settings(UpdateSettingsParams(settings=PI_WINDOW_20K))
    sid = open_file(daemon, session_file(tmp_path))
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("x", total=19000)]))
    job = daemon.jobs.get(sid)
    assert job is not None
    await job.task
    (ended,) = events.of(methods.COMPACTION_ENDED)
    assert ended["error"].startswith("Auto-compaction failed: ") and "entry" not in ended


async def test_fix_report_overflow_twice_is_refused_without_a_lone_compaction_ended(tmp_path: Path) -> None:
    daemon, events = make_daemon(tmp_path)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    progress = Progress()
    result = await daemon.report_overflow(ReportOverflowParams(session_id=sid, work_done_token=7), progress)
    assert result.entry["type"] == "compaction" and progress.bars[0].token == 7
    assert events.of(methods.COMPACTION_STARTED) == [{"sessionId": sid, "reason": "overflow", "willRetry": True}]
    assert events.of(methods.COMPACTION_ENDED)[0]["willRetry"] is True
    assert events.of(methods.COMPACTED)[0]["reason"] == "overflow"
    # An error reply appended and a second overflow report: Pi's one-attempt rule.
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("", total=0, stop="error")]))
    with pytest.raises(NothingToCompact, match="after one compact-and-retry"):
        await daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress())
    # Pi sends a lone end here; started and ended come in pairs: the refusal is compactionFailed alone.
    assert len(events.of(methods.COMPACTION_ENDED)) == len(events.of(methods.COMPACTION_STARTED)) == 1
    assert events.of(methods.COMPACTION_FAILED)[-1]["errorMessage"].startswith("Context overflow recovery failed")


async def test_report_overflow_honours_compaction_enabled(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    daemon.update_settings(UpdateSettingsParams(settings={"compaction": {"enabled": False}}))
    sid = open_file(daemon, session_file(tmp_path))
    with pytest.raises(NothingToCompact, match=r"compaction\.enabled"):
        await daemon.report_overflow(ReportOverflowParams(session_id=sid), Progress())


# -- hooks ----------------------------------------------------------------------


async def test_before_compact_cancel_is_rejected_and_gets_the_preparation(tmp_path: Path) -> None:
    hooks = Hooks(beforeCompact={"cancel": True})
    daemon, _ = make_daemon(tmp_path, hooks=hooks)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    with pytest.raises(Rejected):
        await daemon.compact(CompactParams(session_id=sid, custom_instructions="focus"), Progress())
    assert path.read_bytes() == before
    ((method, payload, timeout),) = hooks.calls
    assert method == methods.BEFORE_COMPACT and timeout == 30
    assert payload["reason"] == "manual" and payload["willRetry"] is False and payload["customInstructions"] == "focus"
    prep = payload["preparation"]
    assert prep["tokensBefore"] == 15399 and prep["serialized"].startswith("[User]: ")
    assert "focus" in prep["prompt"] and prep["settings"]["compaction"]["keepRecentTokens"] == 2000


async def test_before_compact_replacement_is_stored_verbatim_from_hook(tmp_path: Path) -> None:
    summarizer = Counting()
    ids: list[str] = []

    def answer(payload: dict[str, object]) -> object:
        return {"compaction": {"summary": "mine", "firstKeptEntryId": ids[30], "tokensBefore": 999,
                               "details": {"k": 1}}}

    daemon, _ = make_daemon(tmp_path, hooks=Hooks(beforeCompact=answer), summarizer=summarizer)
    sid = open_file(daemon, session_file(tmp_path))
    ids.extend(n.id for n in daemon.get_tree(GetTreeParams(session_id=sid)).nodes)
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    entry = result.entry
    assert (entry["summary"], entry["firstKeptEntryId"], entry["tokensBefore"], entry["fromHook"]) == (
        "mine", ids[30], 999, True)
    assert entry["details"] == {"k": 1} and summarizer.calls == 0


@pytest.mark.parametrize("answer", [
    {"compaction": {"summary": "  "}},  # empty summary: ignored, default path
    {"compaction": {"summary": 5}},  # malformed
    RuntimeError("client error"),
    HANG,
])
async def test_unusable_or_failing_before_compact_falls_back_to_the_summarizer(tmp_path: Path, answer: object) -> None:
    summarizer = Counting()
    daemon, _ = make_daemon(tmp_path, hooks=Hooks(beforeCompact=answer), summarizer=summarizer)
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"hookTimeoutSeconds": 0.05}}))
    sid = open_file(daemon, session_file(tmp_path))
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert result.entry["fromHook"] is False and summarizer.calls >= 1


async def test_hook_first_kept_not_on_path_uses_the_prepared_one(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path, hooks=Hooks(beforeCompact={"compaction": {"summary": "s",
                                                                                "firstKeptEntryId": "zzz"}}))
    sid = open_file(daemon, session_file(tmp_path))
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert result.entry["firstKeptEntryId"] != "zzz" and result.entry["tokensBefore"] == 15399


async def test_review_accept_edit_reject(tmp_path: Path) -> None:
    seen: list[dict[str, object]] = []

    def edit(payload: dict[str, object]) -> object:
        seen.append(payload)
        return {"action": "edit", "summary": "edited by a person"}

    daemon, _ = make_daemon(tmp_path, hooks=Hooks(reviewSummary=edit))
    sid = open_file(daemon, session_file(tmp_path, "a.jsonl"))
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert result.entry["summary"] == "edited by a person"
    (payload,) = seen
    assert payload["kind"] == "compaction" and str(payload["summary"]).startswith("## Goal")
    assert payload["tokensBefore"] == 15399 and 0 < int(str(payload["estimatedTokensAfter"])) < 15399

    hooks = Hooks(reviewSummary={"action": "reject"})
    daemon, events = make_daemon(tmp_path, hooks=hooks)
    path = session_file(tmp_path, "b.jsonl")
    sid = open_file(daemon, path)
    before = path.read_bytes()
    with pytest.raises(Rejected):
        await daemon.compact(CompactParams(session_id=sid), Progress())
    assert path.read_bytes() == before and hooks.calls[0][2] is None
    assert events.methods() == [methods.COMPACTION_FAILED]  # nothing written: only the failure is announced
    (failed,) = events.of(methods.COMPACTION_FAILED)
    assert failed == {"sessionId": sid, "reason": "manual", "errorMessage": None, "aborted": True,
                      "willRetry": False, "errorReason": "cancelled"}

    daemon, _ = make_daemon(tmp_path, hooks=Hooks(reviewSummary={"action": "accept"}))
    sid = open_file(daemon, session_file(tmp_path, "c.jsonl"))
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert str(result.entry["summary"]).startswith("## Goal")


async def test_review_timeout_is_ignored(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path, hooks=Hooks(reviewSummary=HANG))
    daemon.update_settings(UpdateSettingsParams(settings={"daemon": {"reviewTimeoutSeconds": 0.05}}))
    sid = open_file(daemon, session_file(tmp_path))
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert str(result.entry["summary"]).startswith("## Goal")


async def test_close_cancels_a_running_job(tmp_path: Path) -> None:
    gate = Gate()
    daemon, _ = make_daemon(tmp_path, summarizer=gate)
    path = session_file(tmp_path)
    sid = open_file(daemon, path)
    before = path.read_bytes()
    running = asyncio.create_task(daemon.compact(CompactParams(session_id=sid), Progress()))
    await gate.started.wait()
    await daemon.close_session(SessionParams(session_id=sid))
    with pytest.raises(asyncio.CancelledError):
        await running
    assert path.read_bytes() == before
    await daemon.aclose()


async def test_background_auto_compaction_shows_progress_and_honours_fsync(tmp_path: Path) -> None:
    bars = Progress()
    daemon, _ = make_daemon(tmp_path, progress=bars)
    daemon.update_settings(UpdateSettingsParams(settings={"contextWindow": 20000, "daemon": {"fsync": "never"}}))
    sid = open_file(daemon, session_file(tmp_path))
    await daemon.append(AppendParams(session_id=sid, entries=[assistant("x", total=19000)]))
    assert daemon.registry.get(sid).session.fsync is False
    job = daemon.jobs.get(sid)
    assert job is not None
    await job.task
    (bar,) = bars.bars
    assert bar.token is None and bar.ends == ["done"] and bar.reports[-1] == ("done", 100)


@pytest.mark.parametrize(
    ("summarizer", "models", "expected"),
    [
        ({"maxTokens": 777}, {"anthropic/claude-x": {"maxTokens": 12345}}, 777),  # summarizer.maxTokens first
        ({}, {"anthropic/claude-x": {"maxTokens": 12345}}, 12345),  # then the model's, from ``models``
        ({}, {}, None),  # then the window rule (the built-in table does not know claude-x)
    ],
)
async def test_the_preparation_shows_output_limits_and_model_overrides_in_force(
    tmp_path: Path, summarizer: dict[str, object], models: dict[str, object], expected: int | None
) -> None:
    hooks = Hooks(beforeCompact={"cancel": True})
    daemon, _ = make_daemon(tmp_path, hooks=hooks)
    # The session's model (from its assistant messages) is anthropic/claude-sonnet-4-5.
    overrides = {"anthropic/claude-sonnet-4-5": {"keepRecentTokens": 500}, "openai/gpt-5": {"keepRecentTokens": 9}}
    daemon.update_settings(UpdateSettingsParams(settings={
        "summarizer": {"provider": "anthropic", "model": "claude-x", **summarizer}, "models": models,
        "compaction": {"modelOverrides": overrides},
    }))
    sid = open_file(daemon, session_file(tmp_path))
    with pytest.raises(Rejected):
        await daemon.compact(CompactParams(session_id=sid), Progress())
    prep = hooks.calls[0][1]["preparation"]
    shown = prep["settings"]["compaction"]
    assert (shown["keepRecentTokens"], shown["reserveTokens"], shown["modelOverrides"]) == (500, 16384, {})
    assert prep["requests"] and prep["requests"][0]["prompt"] == prep["prompt"]
    for request in prep["requests"]:
        assert request["maxTokens"] == (expected or min(32000, 128000 - (len(request["systemPrompt"])
                                                                          + len(request["prompt"]) + 3) // 4 - 1024))


async def test_retry_settings_drive_the_daemons_summaries(tmp_path: Path) -> None:
    class Flaky(OfflineSummarizer):
        calls = 0

        async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None
                            ) -> SummaryResult:
            self.calls += 1
            if self.calls < 3:
                raise SummarizerError("HTTP 503: overloaded", status=503, retryable=True)
            return await super().summarize(request, progress=progress)

    flaky = Flaky()
    daemon, _ = make_daemon(tmp_path, summarizer=flaky)
    daemon.update_settings(UpdateSettingsParams(settings={"retry": {"baseDelayMs": 1, "maxRetries": 2}}))
    sid = open_file(daemon, session_file(tmp_path))
    progress = Progress()
    await daemon.compact(CompactParams(session_id=sid), progress)
    retries = [(m, p) for m, p in progress.bars[0].reports if m.startswith("retrying in ")]
    assert retries == [("retrying in 0.001s (attempt 2 of 3): HTTP 503: overloaded", None),
                       ("retrying in 0.002s (attempt 3 of 3): HTTP 503: overloaded", None)]
    daemon.update_settings(UpdateSettingsParams(settings={"retry": {"enabled": False}}))
    flaky.calls = 0
    path = session_file(tmp_path, "other.jsonl")
    before = path.read_bytes()
    with pytest.raises(SummarizerFailed):
        await daemon.compact(CompactParams(session_id=open_file(daemon, path)), Progress())
    assert flaky.calls == 1 and path.read_bytes() == before


async def test_a_kept_draft_that_does_not_fit_costs_no_second_preparation(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """pi/compact looks for a kept draft of its range; finding none, it compacts with the preparation it made."""
    from pi_sessiond.pipeline import compaction as pipeline

    daemon, _ = make_daemon(tmp_path)
    sid = open_file(daemon, session_file(tmp_path))
    draft = await daemon.compact(CompactParams(session_id=sid, draft=True, custom_instructions="only tests"),
                                 Progress())
    assert draft.draft_id  # kept, but made with instructions: not the answer to a plain pi/compact
    calls: list[str | None] = []
    real = pipeline.prepare_compaction

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(daemon.registry.get(sid).session.leaf_id)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "prepare_compaction", counted)
    result = await daemon.compact(CompactParams(session_id=sid), Progress())
    assert result.outcome == "compacted" and "only tests" not in str(result.entry.get("summary"))
    assert len(calls) == 1

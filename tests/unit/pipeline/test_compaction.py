"""The compaction pipeline with the real offline summarizer: one entry, Pi-shaped, or nothing."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.unit.store.helpers import assistant, user

from pi_sessiond.compaction.fileops import FileOpsCollector
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.prompts import SPLIT_TURN_SEPARATOR
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.errors import Conflict, NothingToCompact, NotShrinking
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.pipeline.compaction import (
    check_shrinks,
    compact,
    compaction_entry,
    estimated_tokens_after,
    pending_tokens,
    prepare_or_refuse,
    preview,
)
from pi_sessiond.pipeline.requests import (
    HISTORY_HEADINGS,
    TURN_PREFIX_HEADINGS,
    OutputLimit,
    compaction_jobs,
    compaction_requests,
    input_tokens,
    output_limit,
    serialize_for_request,
    serialize_messages,
)
from pi_sessiond.pipeline.summaries import summarize_compaction
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.offline import OfflineSummarizer


@pytest.fixture
def fixture_copy(real_session: Path, tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    shutil.copyfile(real_session, path)
    return path


async def test_compacting_the_fixture_appends_one_pi_shaped_entry(fixture_copy: Path) -> None:
    session = Session.open(fixture_copy)
    phases: list[str] = []
    result = await compact(session, OfflineSummarizer(), progress=lambda m, p: phases.append(m))
    lines = fixture_copy.read_text().splitlines()
    assert len(lines) == 1004  # header + 1002 migrated entries + the compaction
    entry = json.loads(lines[-1])
    assert list(entry) == ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId",
                           "tokensBefore", "details", "usage", "fromHook"]  # Pi 1.6.0's order
    assert entry["parentId"] == f"{1002:08x}" and entry["fromHook"] is False
    assert entry["tokensBefore"] == 180820 == result.tokens_before
    assert entry["firstKeptEntryId"] == f"{947:08x}"  # path index 946 (split turn)
    summary = entry["summary"]
    for heading in (*HISTORY_HEADINGS, *TURN_PREFIX_HEADINGS):
        assert heading in summary
    assert SPLIT_TURN_SEPARATOR in summary
    for path in entry["details"]["modifiedFiles"]:
        assert path in summary
    ctx = Session.open(fixture_copy).context()
    assert ctx.messages[0]["role"] == "compactionSummary" and ctx.messages[0]["summary"] == summary
    assert result.tokens_after < result.tokens_before
    assert phases[0] == "preparing" and phases[-1] == "done" and "writing" in phases


async def test_nothing_to_compact_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "small.jsonl"
    write(path, generate(seed=1, entries=20, shape="linear"))
    before = path.read_bytes()
    with pytest.raises(NothingToCompact):
        await compact(Session.open(path), OfflineSummarizer())
    assert path.read_bytes() == before


async def test_a_second_compaction_right_after_the_first_is_refused(fixture_copy: Path) -> None:
    session = Session.open(fixture_copy)
    await compact(session, OfflineSummarizer(), settings=CompactionSettings(keep_recent_tokens=5000))
    with pytest.raises(NothingToCompact, match="Already compacted"):
        await compact(session, OfflineSummarizer())


class _MovesTheLeaf(OfflineSummarizer):
    """The offline summarizer, but the user navigates while it runs."""

    def __init__(self, session: Session, target: str) -> None:
        self.session, self.target = session, target

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.session.set_leaf(self.target)
        await asyncio.sleep(0)
        return await super().summarize(request, progress=progress)


async def test_leaf_moving_during_the_summary_is_a_conflict(fixture_copy: Path) -> None:
    session = Session.open(fixture_copy)
    before = fixture_copy.read_bytes()
    with pytest.raises(Conflict):
        await compact(session, _MovesTheLeaf(session, f"{500:08x}"))
    assert fixture_copy.read_bytes() == before


class _PiAppends(OfflineSummarizer):
    """The offline summarizer, but Pi appends two turns (parent = the file's last entry) while it runs."""

    def __init__(self, path: Path, parent: str) -> None:
        self.path, self.parent = path, parent

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        lines = [user("pi1", self.parent, "typed in Pi", 9), assistant("pi2", "pi1", "Pi answers", 10)]
        with open(self.path, "a") as fh:
            fh.write("".join(json.dumps(row, separators=(",", ":")) + "\n" for row in lines))
        return await super().summarize(request, progress=progress)


async def test_a_compaction_is_written_on_the_leaf_another_program_moved_on(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, generate(seed=4, entries=150))
    session = Session.open(path)
    leaf = session.leaf_id
    assert leaf is not None
    result = await compact(session, _PiAppends(path, leaf), settings=CompactionSettings(keep_recent_tokens=2000))
    assert result.entry.parent_id == "pi2"  # on the newest leaf, not the one prepared
    reloaded = Session.open(path)  # as Pi loads it: leaf = the last entry
    assert reloaded.leaf_id == result.entry.id
    assert {"pi1", "pi2"} <= {p.entry.id for p in reloaded.projection().entries}  # Pi's turns in the context


class _Cancelled(OfflineSummarizer):
    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


async def test_cancellation_mid_summary_writes_nothing(fixture_copy: Path) -> None:
    session = Session.open(fixture_copy)
    before = fixture_copy.read_bytes()
    task = asyncio.create_task(compact(session, _Cancelled()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fixture_copy.read_bytes() == before
    assert len(session.entries) == 1002


class _Recording(OfflineSummarizer):
    """The offline summarizer, keeping every request it was sent, prompts included (as a provider reads them)."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    @property
    def reads_prompt(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.requests.append(request)
        return await super().summarize(request, progress=progress)


async def test_the_preview_shows_the_requests_that_are_sent(fixture_copy: Path) -> None:
    """``compact --dry-run`` / ``pi/beforeCompact`` and the real run build their requests in one place."""
    session = Session.open(fixture_copy)
    session.append([{"type": "thinking_level_change", "thinkingLevel": "high"}])
    settings = CompactionSettings(reserve_tokens=10000)
    prep = prepare_or_refuse(session, settings)
    assert prep.is_split_turn and prep.messages_to_summarize
    shown = compaction_requests(prep, "Mind the MONKEY")
    recording = _Recording()
    await compact(session, recording, settings=settings, custom_instructions="Mind the MONKEY")
    sent = {r.purpose: r for r in recording.requests}
    assert sorted(sent) == ["history", "turnPrefix"]
    assert shown.history is not None and shown.turn_prefix is not None
    assert sent["history"].prompt == shown.history.prompt == preview(prep, "Mind the MONKEY").prompt
    # The prompt carries tool results head and tail; ``serialized`` stays Pi's exact text.
    sent_text = serialize_for_request(prep.messages_to_summarize)
    assert "Mind the MONKEY" in sent["history"].prompt and sent_text in sent["history"].prompt
    assert shown.serialized == serialize_messages(prep.messages_to_summarize)
    assert sent["turnPrefix"].prompt == shown.turn_prefix.prompt
    assert serialize_for_request(prep.turn_prefix_messages) in sent["turnPrefix"].prompt
    # No 0.8x / 0.5x share of reserveTokens: the window rule (nothing else is known of the offline model).
    window = recording.context_window
    for request in recording.requests:
        used = input_tokens(request.system_prompt, request.prompt)
        assert request.max_tokens == min(32000, window - used - 1024)
    assert sent["history"].reasoning == sent["turnPrefix"].reasoning == "high"
    assert sent["history"].system_prompt == shown.history.system_prompt
    # The dry run's ``requests``: every request, in the order sent, exactly as sent.
    views = preview(prep, "Mind the MONKEY", "high").requests
    assert [(v.purpose, v.system_prompt, v.prompt, v.max_tokens, v.reasoning) for v in views] == [
        (r.purpose, r.system_prompt, r.prompt, r.max_tokens, r.reasoning) for r in recording.requests
    ]
    assert "Mind the MONKEY" in sent["turnPrefix"].prompt  # custom instructions reach the turn prefix too (1.6.0)


def test_a_split_turn_with_nothing_before_it_sends_no_history_request() -> None:
    prefix = ({"role": "user", "content": "start", "timestamp": 1},)
    prep = CompactionPreparation(
        first_kept_entry_id="k", first_kept_entry_index=3, boundary_start=0, turn_start_index=0,
        is_split_turn=True, messages_to_summarize=(), turn_prefix_messages=prefix, tokens_before=10,
        previous_summary=None, file_ops=FileOpsCollector().freeze(), settings=CompactionSettings(),
    )
    jobs = compaction_jobs(prep)
    assert jobs.history is None and jobs.turn_prefix is not None and jobs.turn_prefix.messages == prefix
    assert preview(prep, None).prompt == "" and compaction_requests(prep).history is None
    assert jobs.head == "No prior history."
    assert [r.purpose for r in preview(prep, None).requests] == ["turnPrefix"]


async def test_only_a_new_turn_prefix_keeps_the_previous_summary_verbatim() -> None:
    """Pi 1.6.0 (0.73.1 replaced the previous summary with "No prior history.": data loss)."""
    prefix = ({"role": "user", "content": "start", "timestamp": 1},)
    prep = CompactionPreparation(
        first_kept_entry_id="k", first_kept_entry_index=3, boundary_start=0, turn_start_index=0,
        is_split_turn=True, messages_to_summarize=(), turn_prefix_messages=prefix, tokens_before=10,
        previous_summary="## Goal\n- earlier", file_ops=FileOpsCollector().freeze(), settings=CompactionSettings(),
    )
    jobs = compaction_jobs(prep)
    assert jobs.history is None and jobs.head == "## Goal\n- earlier"
    recording = _Recording()
    text = await summarize_compaction(recording, jobs)
    (request,) = recording.requests
    assert request.purpose == "turnPrefix"
    assert text.text.startswith("## Goal\n- earlier" + SPLIT_TURN_SEPARATOR)


def test_output_limit_rule() -> None:
    """summarizer.maxTokens, else the model's limit, else min(32000, window - input - 1024), never below 1024."""
    assert output_limit(OutputLimit(max_tokens=500, model_max_output=9000), 10**6) == 500
    assert output_limit(OutputLimit(model_max_output=9000), 10**6) == 9000
    assert output_limit(OutputLimit(context_window=200000), 1000) == 32000
    assert output_limit(OutputLimit(context_window=40000), 10000) == 40000 - 10000 - 1024
    assert output_limit(OutputLimit(context_window=8000), 7500) == 1024  # too big to fit: shrunk on the error
    assert input_tokens("abc", "de") == 2 and input_tokens("") == 0


def _with_usage(entry: dict[str, Any], tokens: int) -> dict[str, Any]:
    usage = {**entry["message"]["usage"], "input": tokens, "totalTokens": tokens}
    return {**entry, "message": {**entry["message"], "usage": usage}}


def test_a_summary_that_grows_the_estimated_context_is_refused_whatever_the_usage_says(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = list(generate(seed=3, entries=80))
    last = max(i for i, e in enumerate(lines) if e.get("message", {}).get("role") == "assistant")
    lines[last] = _with_usage(lines[last], 500_000)  # a usage far above what the messages estimate
    write(path, lines)
    session = Session.open(path)
    prep = prepare_or_refuse(session, CompactionSettings(keep_recent_tokens=500))
    before = estimated_tokens_after(session)
    assert prep.tokens_before > 10 * before  # Pi's tokensBefore counts the usage
    bare = pending_tokens(session, compaction_entry(prep, "", None))
    grows = compaction_entry(prep, "x" * 4 * (before - bare + 50), None)  # the context after: a bit larger
    assert pending_tokens(session, grows) > before
    with pytest.raises(NotShrinking) as info:
        check_shrinks(session, prep, grows)
    assert (info.value.data["tokensBefore"], info.value.data["tokensAfter"]) == (before, pending_tokens(session, grows))
    check_shrinks(session, prep, compaction_entry(prep, "short", None))  # one that shrinks it is written

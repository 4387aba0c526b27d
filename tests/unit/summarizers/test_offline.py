"""The offline summarizer on the real Pi fixture, generated sessions and small hand-built cases."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.fileops import format_file_operations
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers import workers
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.offline import OfflineSummarizer, build_summary, parse_summary
from pi_sessiond.summarizers.offline_extract import message_text

Json = dict[str, Any]
HISTORY_HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]


def headings(text: str) -> list[str]:
    return re.findall(r"^#{2,3} .*$", text, re.M)


def request(messages: Any, **kwargs: Any) -> SummaryRequest:
    return SummaryRequest(
        system_prompt="", prompt="", max_tokens=kwargs.pop("max_tokens", 13107), messages=messages, **kwargs
    )


@pytest.fixture(scope="module")
def prepared(real_session: Path) -> CompactionPreparation:
    prep = prepare_compaction(Session.open(real_session).path_to(), CompactionSettings())
    assert prep is not None
    return prep


@pytest.fixture(scope="module")
def fixture_summary(prepared: CompactionPreparation) -> str:
    return build_summary(request(prepared.messages_to_summarize, previous_summary=prepared.previous_summary))


def user(text: str) -> Json:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def call(call_id: str, name: str, text: str = "", stop: str = "toolUse", **args: Any) -> Json:
    blocks: list[Json] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
    return {"role": "assistant", "content": blocks, "stopReason": stop}


def result(call_id: str, name: str, text: str, error: bool = False) -> Json:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


def said(text: str, stop: str = "stop") -> Json:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": stop}


# --- the Pi fixture -------------------------------------------------------------------------


def test_fixture_keeps_modified_files_last_request_and_last_error(
    prepared: CompactionPreparation, fixture_summary: str
) -> None:
    lists = prepared.file_lists
    full = fixture_summary + format_file_operations(lists.read_files, lists.modified_files)
    assert lists.modified_files
    for path in lists.modified_files:
        assert path in full
    users = [message_text(m).strip() for m in prepared.messages_to_summarize if m.get("role") == "user"]
    assert users[-1] == "why are there 2 subscription handlers?"
    assert users[-1] in fixture_summary.split("## Critical Context")[1]
    errors = [
        message_text(m).strip()
        for m in prepared.messages_to_summarize
        if m.get("role") == "toolResult" and m.get("isError")
    ]
    assert errors[-1] in fixture_summary.split("## Critical Context")[1]
    assert f"Last error: `bash` (`npm run check`) failed: {errors[-1]}" in fixture_summary


def test_fixture_has_the_history_format_and_the_main_goal(fixture_summary: str) -> None:
    assert headings(fixture_summary) == HISTORY_HEADINGS
    goal = fixture_summary.split("## Constraints")[0]
    for word in ("Refactor", "`coding-agent`", "`AgentSession`"):
        assert word in goal
    assert goal.count("\n- ") == 1  # the task in a sentence, not every request
    assert "<read-files>" not in fixture_summary and "<modified-files>" not in fixture_summary
    assert "- **E2E tests only** - no unit tests" in fixture_summary  # preference lifted from the old summary


def test_fixture_done_lists_real_edited_files(prepared: CompactionPreparation, fixture_summary: str) -> None:
    done = fixture_summary.split("### Done")[1].split("### In Progress")[0]
    edited = {
        b["arguments"]["path"]
        for m in prepared.messages_to_summarize
        if m.get("role") == "assistant"
        for b in m["content"]
        if b.get("type") == "toolCall" and b["name"] in ("edit", "write")
    }
    assert len(edited) >= 10
    for path in edited:
        assert f"- [x] `{path}` (" in done
    assert (
        "- [x] `/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/core/agent-session.ts` (6 edits)" in done
    )
    assert "- [x] Committed: Move config.ts from utils/ to src/" in done


def test_fixture_summary_is_far_smaller_than_the_conversation(
    prepared: CompactionPreparation, fixture_summary: str
) -> None:
    serialized = serialize_conversation(convert_to_llm(prepared.messages_to_summarize))
    assert len(fixture_summary) * 10 < len(serialized)


def test_fixture_keeps_an_unstructured_previous_summary_whole(
    prepared: CompactionPreparation, fixture_summary: str
) -> None:
    assert prepared.previous_summary
    critical = fixture_summary.split("## Critical Context")[1]
    assert "Earlier context (previous summary, kept verbatim):" in critical
    for line in prepared.previous_summary.splitlines():
        assert ("> " + line).rstrip() in critical


def test_fixture_turn_prefix(prepared: CompactionPreparation) -> None:
    text = build_summary(request(prepared.turn_prefix_messages, purpose="turnPrefix", max_tokens=8192))
    assert headings(text) == ["## Original Request", "## Progress So Far", "## Context Needed to Continue"]
    assert "> wait, wtf this doesn't look right to me?" in text
    assert "`/Users/badlogic/workspaces/pi-mono/packages/coding-agent/src/core/agent-session.ts` (1 edit)" in text


async def test_summarizer_protocol_usage_and_progress(prepared: CompactionPreparation) -> None:
    summarizer = OfflineSummarizer()
    seen: list[int] = []
    req = request(prepared.messages_to_summarize, previous_summary=prepared.previous_summary)
    first = await summarizer.summarize(req, progress=seen.append)
    second = await summarizer.summarize(req)
    await summarizer.aclose()
    assert (summarizer.name, summarizer.context_window) == ("offline", 1_000_000)
    assert first.text == second.text == build_summary(req)
    assert (first.provider, first.model) == ("offline", "offline")
    assert first.usage.input == first.usage.output == first.usage.total_tokens == 0
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] > seen[0]


# --- budgets, branches, instructions --------------------------------------------------------


@pytest.mark.parametrize("max_tokens", [60, 300, 1000])
def test_max_tokens_trims_items_never_headings(prepared: CompactionPreparation, max_tokens: int) -> None:
    text = build_summary(
        request(prepared.messages_to_summarize, previous_summary=prepared.previous_summary, max_tokens=max_tokens)
    )
    assert headings(text) == HISTORY_HEADINGS
    only_headings = "\n\n".join(f"{h}\n(none)" for h in HISTORY_HEADINGS)
    # user directions are never trimmed (the gate would put them back): the rest fits the bound
    directions = text.split("## Constraints & Preferences\n", 1)[1].split("\n\n## ", 1)[0]
    counts = [ln for ln in text.splitlines() if ln.endswith("not listed (size bound)")]
    assert len(text) - len(directions) - sum(map(len, counts)) <= max(max_tokens * 4, len(only_headings)) + 100
    assert "- **E2E tests only** - no unit tests" in directions
    assert "not listed (size bound)" in text  # what the bound took out is counted
    if max_tokens == 1000:
        assert "why are there 2 subscription handlers?" in text  # newest items survive


def test_branch_format_has_no_critical_context_preamble_or_file_lists() -> None:
    messages = [
        user("Add retries to the HTTP client, keep the diff minimal."),
        call("c1", "edit", "Adding a retry loop:", path="src/http.ts", oldText="a", newText="b"),
    ]
    text = build_summary(request(messages, purpose="branch", max_tokens=2048))
    assert headings(text) == HISTORY_HEADINGS[:-1]
    assert not text.startswith("The user explored") and "<modified-files>" not in text
    assert "- [x] `src/http.ts` (1 edit): Adding a retry loop" in text  # Pi drops tool results from branches
    goal, constraints = text.split("## Constraints & Preferences")[0], text.split("## Constraints & Preferences")[1]
    assert "keep the diff minimal." in goal  # the task names it once: not repeated under Constraints
    assert "keep the diff minimal." not in constraints.split("## Progress")[0]


def test_custom_instructions_add_a_focus_note_and_are_preferred() -> None:
    messages: list[Json] = []
    for n in range(30):
        messages += [call(f"c{n}", "bash", command=f"make target{n}"), result(f"c{n}", "bash", "ok")]
    text = build_summary(request(messages, custom_instructions="Keep target3 in mind", max_tokens=13107))
    assert "- Additional focus: Keep target3 in mind" in text
    assert "Ran `make target3`" in text and "Ran `make target4`" not in text  # only 8 commands kept, the focus one too


# --- progress, errors and merging -----------------------------------------------------------


def test_errors_block_until_the_same_file_succeeds() -> None:
    messages = [
        user("Fix the parser and the lexer please"),
        call("a", "edit", path="src/parser.ts", oldText="x", newText="y"),
        result("a", "edit", "Could not find the exact text in src/parser.ts", error=True),
        call("b", "edit", path="src/parser.ts", oldText="x ", newText="y"),
        result("b", "edit", "Successfully replaced text in src/parser.ts."),
        call("c", "write", path="src/lexer.ts", content=""),
        result("c", "write", "EACCES: permission denied, open 'src/lexer.ts'", error=True),
        said("I'll switch to a hand-written lexer instead of the generated one because it is easier to debug."),
    ]
    text = build_summary(request(messages))
    blocked = text.split("### Blocked")[1].split("## Key Decisions")[0]
    assert "`write` on `src/lexer.ts` failed: EACCES: permission denied" in blocked
    assert "parser.ts" not in blocked
    assert "- [x] `src/parser.ts` (1 edit)" in text
    assert "- **I'll switch to a hand-written lexer instead of the generated one**: it is easier to debug." in text
    assert "Last error: `write` on `src/lexer.ts` failed: EACCES: permission denied, open 'src/lexer.ts'" in text
    assert "- [x] Answered: Fix the parser and the lexer please" in text


def kitchen_sink_halves(tmp_path: Path) -> tuple[list[Json], list[Json]]:
    path = tmp_path / "sink.jsonl"
    write(path, generate(shape="kitchen-sink", entries=400, seed=3))
    prep = prepare_compaction(Session.open(path).path_to(), CompactionSettings(keep_recent_tokens=2000))
    assert prep is not None and len(prep.messages_to_summarize) > 40
    messages = list(prep.messages_to_summarize)
    middle = next(i for i in range(len(messages) // 2, len(messages)) if messages[i].get("role") == "user")
    return messages[:middle], messages[middle:]


ONE_OF_A_KIND = ("Last error:", "Last user request", "Identifiers")


def test_update_keeps_every_item_of_a_structured_previous_summary(tmp_path: Path) -> None:
    """Every item survives, except the one-of-a-kind ones the new range replaces (one last error, one request)."""
    first, second = kitchen_sink_halves(tmp_path)
    previous = build_summary(request(first))
    assert headings(previous) == HISTORY_HEADINGS
    updated = build_summary(request(second, previous_summary=previous))
    assert headings(updated) == HISTORY_HEADINGS
    old, new = parse_summary(previous), parse_summary(updated)
    assert "earlier" not in old
    for key, items in old.items():
        for item in items:
            plain = item.removesuffix(" (current)")
            if key == "critical" and plain.startswith(ONE_OF_A_KIND):
                continue
            assert any(plain in candidate for items in new.values() for candidate in items), (key, item)
    for kind in ONE_OF_A_KIND:
        assert sum(item.startswith(kind) for item in new["critical"]) <= 1, kind
    assert build_summary(request(second, previous_summary=previous)) == updated


def test_update_moves_finished_in_progress_items_to_done() -> None:
    previous = build_summary(
        request(
            [
                user("Make `src/db/pool.ts` release clients in finally"),
                said("Looking at `src/db/pool.ts` now.", stop="aborted"),
            ]
        )
    )
    assert "- [ ] Make `src/db/pool.ts` release clients in finally (interrupted)" in previous
    messages = [
        user("continue"),
        call("e", "edit", path="src/db/pool.ts", oldText="a", newText="b"),
        result("e", "edit", "Successfully replaced text in src/db/pool.ts."),
        said("Done, pool fixed."),
    ]
    updated = build_summary(request(messages, previous_summary=previous + "\n\n<modified-files>\nx\n</modified-files>"))
    done = updated.split("### Done")[1].split("### In Progress")[0]
    assert "- [x] Make `src/db/pool.ts` release clients in finally (interrupted)" in done
    assert "<modified-files>" not in updated
    assert updated.split("## Constraints")[0].count("\n- ") == 1  # the goal is the task, once


def test_generated_sessions_give_the_full_format(tmp_path: Path) -> None:
    for seed, shape in ((1, "kitchen-sink"), (2, "linear"), (3, "branchy")):
        path = tmp_path / f"{shape}.jsonl"
        write(path, generate(shape=shape, entries=300, seed=seed))
        prep = prepare_compaction(Session.open(path).path_to(), CompactionSettings(keep_recent_tokens=3000))
        assert prep is not None
        text = build_summary(request(prep.messages_to_summarize, previous_summary=prep.previous_summary))
        assert headings(text) == HISTORY_HEADINGS
        for path_ in prep.file_lists.modified_files:
            if any(path_ in str(m) for m in prep.messages_to_summarize):
                assert f"`{path_}`" in text


# --- iterative updates: the later preference wins, one error, open steps only ---------------


def test_an_update_marks_a_restated_preference_and_keeps_one_last_error() -> None:
    first = [
        user("Build the exporter. Always use tabs for indentation."),
        call("t", "bash", command="make test"),
        result("t", "bash", "error: linker failed", error=True),
        said("Linking fails."),
    ]
    previous = build_summary(request(first))
    second = [
        user("Change of plan: always use spaces for indentation."),
        call("u", "bash", command="make check"),
        result("u", "bash", "error: 2 warnings treated as errors", error=True),
        said("Two warnings left."),
    ]
    updated = parse_summary(build_summary(request(second, previous_summary=previous)))
    constraints = updated["constraints"]
    assert "Always use tabs for indentation. (superseded by a later item)" in constraints
    # the later one is said once, in the verbatim latest request
    assert "Change of plan: always use spaces for indentation." not in constraints
    assert any("Change of plan: always use spaces" in i for i in updated["critical"])
    errors = [i for i in updated["critical"] if i.startswith("Last error:")]
    assert len(errors) == 1 and "2 warnings treated as errors" in errors[0]


def test_plan_steps_already_done_are_not_next_steps() -> None:
    messages = [
        user("Tidy the repo"),
        said("Plan:\n1. Update `setup.cfg`\n2. Rename `util.py`\n3. Write the changelog", stop="toolUse"),
        call("w", "write", path="setup.cfg", content="x"),
        result("w", "write", "ok"),
        said("setup.cfg is updated.", stop="toolUse"),
    ]
    steps = parse_summary(build_summary(request(messages)))["next"]
    assert not any("setup.cfg" in s for s in steps)
    assert any("Rename `util.py`" in s for s in steps) and any("changelog" in s for s in steps)


def test_a_branch_summary_says_why_the_branch_was_left() -> None:
    messages = [user("Try the regex approach"), call("e", "bash", command="npm test"),
                result("e", "bash", "Error: catastrophic backtracking in parse()", error=True)]
    summary = build_summary(request(messages, purpose="branch"))
    assert "**Branch left while blocked**" in summary and "catastrophic backtracking" in summary


async def test_a_summary_built_in_a_worker_process_is_the_one_built_here(prepared: CompactionPreparation) -> None:
    req = request(prepared.messages_to_summarize, previous_summary=prepared.previous_summary, max_tokens=700)
    here: list[int] = []
    there: list[int] = []
    built = build_summary(req, progress=here.append)
    workers.use_processes(1)
    try:
        result = await OfflineSummarizer().summarize(req, progress=there.append)
        assert workers._processes is not None  # it did run in a worker process
    finally:
        workers.use_processes(0)
        workers.shutdown()
    assert result.text == built
    assert there == here


async def test_a_message_too_deep_for_json_bytes_is_summarized_from_the_objects() -> None:
    deep: dict[str, object] = {"end": True}
    for _ in range(300):  # deeper than orjson writes
        deep = {"inner": deep}
    messages = [{"role": "user", "content": "fix the parser", "timestamp": 1},
                {"role": "toolResult", "toolCallId": "t", "toolName": "read",
                 "content": [{"type": "text", "text": "x"}], "details": deep, "isError": False, "timestamp": 2}]
    req = request(messages)
    workers.use_processes(1)
    try:
        result = await OfflineSummarizer().summarize(req)
        assert workers._processes is None  # built here, in a thread: no bytes to send
    finally:
        workers.use_processes(0)
        workers.shutdown()
    assert result.text == build_summary(req)


def test_a_split_turn_summary_without_history_carries_no_earlier_context() -> None:
    """A first compaction that is only a split turn says "No prior history." for the history: nothing to carry."""
    from pi_sessiond.compaction.prompts import NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR

    previous = f"{NO_PRIOR_HISTORY}{SPLIT_TURN_SEPARATOR}## Original Request\nFix the totals.\n"
    sections = parse_summary(previous)
    assert "earlier" not in sections and NO_PRIOR_HISTORY not in str(sections)
    assert any("Fix the totals." in item for item in sections["critical"])
    assert "earlier" in parse_summary(f"Some free text.{SPLIT_TURN_SEPARATOR}turn")


async def test_the_gate_facts_found_in_a_worker_process_are_the_ones_found_here(
        prepared: CompactionPreparation, fixture_summary: str) -> None:
    from pi_sessiond.pipeline import summaries
    from pi_sessiond.pipeline.requests import SummaryJob
    from pi_sessiond.pipeline.summaries import facts_from_payload, job_facts

    messages = tuple(prepared.messages_to_summarize)
    history = SummaryJob(purpose="history", messages=messages, previous_summary=fixture_summary)
    branch = SummaryJob(purpose="branch", messages=messages[-20:], facts_from=messages[-60:])
    for job in (history, branch):
        workers.use_processes(1)
        try:
            there = await workers.elsewhere(job_facts, summaries._facts_payload, facts_from_payload, job)
            assert workers._processes is not None  # it did run in a worker process
        finally:
            workers.use_processes(0)
            workers.shutdown()
        assert there == job_facts(job) and there.constraints  # the history has directions to find

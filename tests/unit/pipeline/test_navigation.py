"""Tree navigation with the real offline summarizer: Pi's ``agent-session-tree-navigation.test.ts``.

Pi's tests need a model; these port their deterministic parts
and add the contracts of ``pi_sessiond.pipeline.navigation``: nothing is written
without a summary or a label, ``fromId`` is the abandoned leaf (as Pi 1.6.0;
0.73.1 wrote the target), and a summary that does not finish (cancelled, leaf moved) leaves
the file and the leaf untouched.

The tree used by most tests is Pi's two-prompt session::

    u1 -> a1 -> u2 -> a2 (leaf; a2 reads src/parser.py and edits src/lexer.py)
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.unit.store.helpers import assistant, user, write_lines

from pi_sessiond.compaction.prompts import BRANCH_SUMMARY_PREAMBLE
from pi_sessiond.errors import Conflict
from pi_sessiond.pipeline.navigation import NO_CONTENT, generate_branch_summary, navigate_tree
from pi_sessiond.pipeline.requests import BRANCH_HEADINGS
from pi_sessiond.store.errors import ReadOnlySessionError, UnknownEntryError
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.base import ProgressCallback, SummaryRequest, SummaryResult
from pi_sessiond.summarizers.offline import OfflineSummarizer

Json = dict[str, Any]
U1_TEXT = "First: add a tokenizer to the parser"
U2_TEXT = "Second: fix the lexer bug in src/lexer.py"
FILE_LISTS = "<read-files>\nsrc/parser.py\n</read-files>\n\n<modified-files>\nsrc/lexer.py\n</modified-files>"


def tool_assistant(eid: str, parent: str, text: str, n: int, calls: list[tuple[str, str]]) -> Json:
    """An assistant message with a text block and one tool call per ``(tool, path)``."""
    entry = assistant(eid, parent, text, n)
    blocks = [{"type": "toolCall", "id": f"{eid}-{i}", "name": tool, "arguments": {"path": path}}
              for i, (tool, path) in enumerate(calls)]
    entry["message"]["content"] += blocks
    entry["message"]["stopReason"] = "toolUse"
    return entry


def two_prompts() -> list[Json]:
    return [
        user("u1", None, U1_TEXT, 1),
        assistant("a1", "u1", "The tokenizer is in place.", 2),
        user("u2", "a1", U2_TEXT, 3),
        tool_assistant("a2", "u2", "Fixed the off-by-one in the lexer.", 4,
                       [("read", "src/parser.py"), ("edit", "src/lexer.py")]),
    ]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return write_lines(tmp_path / "s.jsonl", two_prompts())


def appended(path: Path, before: bytes) -> list[Json]:
    """The entries written after ``before`` (the file's earlier bytes)."""
    data = path.read_bytes()
    assert data.startswith(before)
    return [json.loads(line) for line in data[len(before):].splitlines()]


# --- without a summary: Pi's plain navigation ----------------------------------------------------


async def test_navigating_to_the_root_user_message_puts_its_text_back(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "u1")
    assert result.editor_text == U1_TEXT
    assert result.leaf_id is None and session.leaf_id is None and result.old_leaf_id == "a2"
    assert result.entry is None and not result.cancelled
    assert session.context().messages == []
    assert path.read_bytes() == before


async def test_navigating_to_an_assistant_makes_it_the_leaf(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "a1")
    assert result.editor_text is None
    assert result.leaf_id == "a1" == session.leaf_id
    assert [m["role"] for m in session.context().messages] == ["user", "assistant"]
    assert path.read_bytes() == before


async def test_editor_text_joins_text_blocks_without_separator(tmp_path: Path) -> None:
    root = user("u1", None, "", 1)
    root["message"]["content"] = [{"type": "text", "text": "one "}, {"type": "image", "data": "x", "mimeType": "i"},
                                  {"type": "text", "text": "two"}]
    path = write_lines(tmp_path / "s.jsonl", [root, assistant("a1", "u1", "ok", 2)])
    result = await navigate_tree(Session.open(path), "u1")
    assert result.editor_text == "one two"


async def test_summarize_false_adds_no_entries(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=False)
    assert result.entry is None and result.leaf_id == "a1" and result.editor_text == U2_TEXT
    assert len(session.entries) == 4
    assert path.read_bytes() == before


async def test_navigating_to_the_current_leaf_is_a_no_op(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "a2", summarizer=OfflineSummarizer(), summarize=True, label="here")
    assert result.old_leaf_id == result.leaf_id == "a2" == session.leaf_id
    assert result.entry is None and result.editor_text is None and not result.cancelled
    assert session.tree.labels == {} and len(session.entries) == 4
    assert path.read_bytes() == before


async def test_unknown_target_raises_and_writes_nothing(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    for summarize in (False, True):
        with pytest.raises(UnknownEntryError, match="Entry nope not found"):
            await navigate_tree(session, "nope", summarizer=OfflineSummarizer(), summarize=summarize, label="x")
    assert session.leaf_id == "a2" and len(session.entries) == 4
    assert path.read_bytes() == before


async def test_summarize_without_a_summarizer_is_refused(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    with pytest.raises(ValueError, match="No model available for summarization"):
        await navigate_tree(session, "u1", summarize=True)
    assert session.leaf_id == "a2" and path.read_bytes() == before


# --- with a summary ---------------------------------------------------------------------------


async def test_summary_to_the_root_user_becomes_a_new_root_and_the_leaf(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "u1", summarizer=OfflineSummarizer(), summarize=True)
    assert result.editor_text == U1_TEXT
    assert result.entry is not None and result.entry.type == "branch_summary"
    assert result.entry.parent_id is None
    assert result.leaf_id == result.entry.id == session.leaf_id
    [written] = appended(path, before)
    assert written["id"] == result.entry.id and written["parentId"] is None
    assert [m["role"] for m in session.context().messages] == ["branchSummary"]


async def test_summary_to_a_nested_user_hangs_under_its_parent(path: Path) -> None:
    session = Session.open(path)
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=True)
    assert result.editor_text == U2_TEXT
    assert result.entry is not None and result.entry.parent_id == "a1"
    assert result.leaf_id == result.entry.id == session.leaf_id
    assert sorted(session.tree.children["a1"]) == sorted(["u2", result.entry.id])
    roles = [m["role"] for m in session.context().messages]
    assert roles == ["user", "assistant", "branchSummary"]


async def test_summary_to_an_assistant_hangs_under_it(path: Path) -> None:
    session = Session.open(path)
    result = await navigate_tree(session, "a1", summarizer=OfflineSummarizer(), summarize=True)
    assert result.editor_text is None
    assert result.entry is not None and result.entry.parent_id == "a1"
    assert result.leaf_id == result.entry.id == session.leaf_id
    assert U2_TEXT in result.entry.data["summary"]  # u2 and a2 were abandoned


async def test_summary_text_is_preamble_body_and_file_lists(path: Path) -> None:
    result = await navigate_tree(Session.open(path), "a1", summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is not None
    data = result.entry.data
    summary: str = data["summary"]
    assert summary.startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal\n")
    assert summary.endswith("\n\n" + FILE_LISTS)
    body = summary.removeprefix(BRANCH_SUMMARY_PREAMBLE)
    assert [h for h in BRANCH_HEADINGS if h in body.splitlines()] == list(BRANCH_HEADINGS)
    assert "## Critical Context" not in summary
    assert data["details"] == {"readFiles": ["src/parser.py"], "modifiedFiles": ["src/lexer.py"]}
    assert data["fromHook"] is False


async def test_summary_without_touched_files_has_no_file_lists(path: Path) -> None:
    session = Session.open(path)
    await navigate_tree(session, "a1")  # leaf a1: a2 (the tool calls) is off the path now
    session.append([user("x", None, "Third: rename the module", 9)])
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is not None
    summary = result.entry.data["summary"]
    assert "Third: rename the module" in summary
    assert "<read-files>" not in summary and "<modified-files>" not in summary
    assert result.entry.data["details"] == {"readFiles": [], "modifiedFiles": []}


async def test_branch_summary_from_id_is_the_old_leaf_as_in_pi_1_6_0(path: Path) -> None:
    """Deliberate fix: Pi 0.73.1 wrote the new position as ``fromId``."""
    before = path.read_bytes()
    result = await navigate_tree(Session.open(path), "u2", summarizer=OfflineSummarizer(), summarize=True)
    [written] = appended(path, before)
    assert written["fromId"] == "a2" == result.old_leaf_id
    assert written["fromId"] != written["parentId"]  # 0.73.1 would have written "a1"
    assert list(written) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "usage",
                             "fromHook"]  # Pi 1.6.0's branchWithSummary order


async def test_side_branch_back_to_u2_summarizes_the_side_branch(path: Path) -> None:
    session = Session.open(path)
    await navigate_tree(session, "u2")  # leaf a1, "Second" back in the editor
    side = session.append([user("", None, "Side: try a regex lexer instead", 5)])
    session.append([assistant("", None, "The regex version is slower.", 6)])
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is not None and result.entry.parent_id == "a1"
    summary = result.entry.data["summary"].removeprefix(BRANCH_SUMMARY_PREAMBLE)
    assert summary.strip() and "Side: try a regex lexer instead" in summary
    assert U2_TEXT not in summary and side[0].parent_id == "a1"


async def test_target_below_the_old_leaf_has_nothing_to_summarize(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    await navigate_tree(session, "a1")
    result = await navigate_tree(session, "a2", summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is None and result.leaf_id == "a2"
    assert path.read_bytes() == before


async def test_nothing_to_summarize_without_messages(path: Path) -> None:
    session = Session.open(path)
    summary = await generate_branch_summary([], OfflineSummarizer())
    assert summary.summary == NO_CONTENT and summary.read_files == () and session.leaf_id == "a2"


# --- instructions -----------------------------------------------------------------------------


class Recording(OfflineSummarizer):
    """The offline summarizer, keeping every request it was given, prompts included (as a provider reads them)."""

    def __init__(self) -> None:
        self.requests: list[SummaryRequest] = []

    @property
    def reads_prompt(self) -> bool:
        return True

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.requests.append(request)
        return await super().summarize(request, progress=progress)


def many_requests(count: int) -> list[Json]:
    """``count`` user/assistant turns; the second request alone mentions MONKEY (the first is the original goal).

    The requests carry no constraint cue, so the fidelity gate adds none of them back.
    """
    lines: list[Json] = [user("r", None, "Start", 1), assistant("ra", "r", "ok", 2)]
    parent = "ra"
    for i in range(count):
        text = "Tackle the MONKEY feeding next" if i == 1 else f"Fix ticket number {i}"
        lines += [user(f"q{i}", parent, text, 3), assistant(f"qa{i}", f"q{i}", "Done.", 4)]
        parent = f"qa{i}"
    return lines


async def test_custom_instructions_are_honoured(tmp_path: Path) -> None:
    """Pi asks for "MONKEY MONKEY MONKEY"; offline, the focus leads the Goal."""
    lines = many_requests(14)  # the Goal section keeps 12
    plain_path, focused_path = (write_lines(tmp_path / name, lines) for name in ("plain.jsonl", "focused.jsonl"))
    plain = await navigate_tree(Session.open(plain_path), "ra", summarizer=OfflineSummarizer(), summarize=True)
    recording = Recording()
    focused = await navigate_tree(Session.open(focused_path), "ra", summarizer=recording, summarize=True,
                                  custom_instructions="Keep the MONKEY in mind")
    assert plain.entry is not None and focused.entry is not None
    def goal(summary: str) -> str:
        return summary.split("## Goal\n", 1)[1].split("\n\n", 1)[0]

    # the Goal is the task (and the focus, first); every request is still a direction the gate keeps
    assert "MONKEY" not in goal(plain.entry.data["summary"])
    assert goal(focused.entry.data["summary"]).startswith("- Additional focus: Keep the MONKEY in mind")
    assert "Tackle the MONKEY feeding next" in focused.entry.data["summary"]
    [request] = recording.requests
    assert request.purpose == "branch" and request.custom_instructions == "Keep the MONKEY in mind"
    assert request.prompt.endswith("\n\nAdditional focus: Keep the MONKEY in mind")
    assert "Create a structured summary of this conversation branch" in request.prompt


async def test_offline_branch_summary_mentions_the_focus(path: Path) -> None:
    result = await navigate_tree(Session.open(path), "a1", summarizer=OfflineSummarizer(), summarize=True,
                                 custom_instructions="MONKEY MONKEY MONKEY")
    assert result.entry is not None
    assert "MONKEY MONKEY MONKEY" in result.entry.data["summary"]


async def test_replace_instructions_send_the_custom_text_alone(path: Path) -> None:
    recording = Recording()
    result = await navigate_tree(Session.open(path), "a1", summarizer=recording, summarize=True,
                                 custom_instructions="List only the files.", replace_instructions=True)
    [request] = recording.requests
    assert request.replace_instructions is True
    assert request.prompt.endswith("</conversation>\n\nList only the files.")
    assert "Create a structured summary" not in request.prompt and "Additional focus" not in request.prompt
    assert result.entry is not None
    assert result.entry.data["summary"].startswith(BRANCH_SUMMARY_PREAMBLE)
    assert result.entry.data["summary"].endswith(FILE_LISTS)


async def test_replace_without_instructions_keeps_pi_prompt(path: Path) -> None:
    recording = Recording()
    await navigate_tree(Session.open(path), "a1", summarizer=recording, summarize=True, replace_instructions=True)
    [request] = recording.requests
    assert "Create a structured summary of this conversation branch" in request.prompt
    assert "Additional focus" not in request.prompt


# --- labels -----------------------------------------------------------------------------------


async def test_label_goes_on_the_summary_and_becomes_the_leaf(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=True, label="lexer-try")
    assert result.entry is not None
    summary_row, label_row = appended(path, before)
    assert summary_row["type"] == "branch_summary" and summary_row["parentId"] == "a1"
    assert label_row["type"] == "label" and label_row["parentId"] == summary_row["id"]
    assert label_row["targetId"] == summary_row["id"] and label_row["label"] == "lexer-try"
    assert session.leaf_id == label_row["id"] and session.tree.labels == {summary_row["id"]: "lexer-try"}
    assert result.entry.id == summary_row["id"]  # the result names the summary, not the label
    assert Session.open(path).tree.labels == {summary_row["id"]: "lexer-try"}


async def test_label_without_summary_goes_on_the_target(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "a1", label="good point")
    [label_row] = appended(path, before)
    assert label_row["type"] == "label" and label_row["targetId"] == "a1" and label_row["parentId"] == "a1"
    assert result.entry is None and session.leaf_id == label_row["id"]
    assert session.tree.labels == {"a1": "good point"}


async def test_label_on_the_root_user_starts_a_new_root(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    result = await navigate_tree(session, "u1", label="start over")
    [label_row] = appended(path, before)
    assert label_row["parentId"] is None and label_row["targetId"] == "u1"
    assert result.editor_text == U1_TEXT and session.leaf_id == label_row["id"]


# --- a summary that does not finish -----------------------------------------------------------


class Sleeping(OfflineSummarizer):
    """Never answers: the test cancels it."""

    def __init__(self) -> None:
        self.started = asyncio.Event()

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.started.set()
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


async def test_cancelling_the_summary_leaves_file_and_leaf_untouched(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    summarizer = Sleeping()
    task = asyncio.create_task(navigate_tree(session, "u1", summarizer=summarizer, summarize=True, label="x"))
    await asyncio.wait_for(summarizer.started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert session.leaf_id == "a2" and len(session.entries) == 4 and session.tree.labels == {}
    assert path.read_bytes() == before


class MovesTheLeaf(OfflineSummarizer):
    """The offline summarizer, but the user navigates elsewhere while it runs."""

    def __init__(self, session: Session, target: str) -> None:
        self.session, self.target = session, target

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        self.session.set_leaf(self.target)
        await asyncio.sleep(0)
        return await super().summarize(request, progress=progress)


async def test_leaf_moved_during_the_summary_is_a_conflict(path: Path) -> None:
    before = path.read_bytes()
    session = Session.open(path)
    with pytest.raises(Conflict):
        await navigate_tree(session, "u1", summarizer=MovesTheLeaf(session, "u2"), summarize=True, label="x")
    assert session.leaf_id == "u2"  # where the other navigation put it, not ours
    assert len(session.entries) == 4 and session.tree.labels == {}
    assert path.read_bytes() == before


async def test_progress_reports_streamed_tokens(path: Path) -> None:
    seen: list[tuple[str, int | None]] = []
    await navigate_tree(Session.open(path), "a1", summarizer=OfflineSummarizer(), summarize=True,
                        progress=lambda message, pct: seen.append((message, pct)))
    assert seen and all(m.endswith(" tokens streamed") and pct is not None and 5 <= pct <= 90 for m, pct in seen)
    assert [pct for _, pct in seen] == sorted(pct for _, pct in seen)


async def test_failed_write_leaves_the_leaf_untouched(tmp_path: Path) -> None:
    session = Session.open(write_lines(tmp_path / "s.jsonl", two_prompts()))
    session.read_only_reason = "refused for the test"
    with pytest.raises(ReadOnlySessionError):
        await navigate_tree(session, "a1", label="x")
    assert session.leaf_id == "a2"


class PiAppendsMeanwhile(OfflineSummarizer):
    """The offline summarizer, but Pi appends a turn to the file (on the old leaf) while it runs."""

    def __init__(self, path: Path, parent: str) -> None:
        self.path, self.parent = path, parent

    async def summarize(self, request: SummaryRequest, *, progress: ProgressCallback | None = None) -> SummaryResult:
        with open(self.path, "a") as fh:
            fh.write(json.dumps(user("pi1", self.parent, "typed in Pi", 9), separators=(",", ":")) + "\n")
        return await super().summarize(request, progress=progress)


async def test_another_program_continuing_the_old_leaf_during_the_summary_is_a_conflict(path: Path) -> None:
    """The branch summary would leave Pi's new turn unsummarized on the abandoned branch."""
    session = Session.open(path)
    with pytest.raises(Conflict):
        await navigate_tree(session, "u1", summarizer=PiAppendsMeanwhile(path, "a2"), summarize=True)
    assert session.leaf_id == "pi1"  # the leaf followed Pi's turn
    assert [json.loads(raw)["id"] for raw in path.read_text().splitlines()[1:]] == ["u1", "a1", "u2", "a2", "pi1"]


def failed_run(eid: str, parent: str, n: int) -> list[Json]:
    """A bash call and its failing result (Pi sends no tool results to a branch summary)."""
    call = {"type": "toolCall", "id": f"{eid}-c", "name": "bash", "arguments": {"command": "git mv a.py b.py && make"}}
    entry = assistant(eid, parent, "Trying the build.", n)
    entry["message"]["content"].append(call)
    entry["message"]["stopReason"] = "toolUse"
    result = {"type": "message", "id": f"{eid}-r", "parentId": eid, "timestamp": entry["timestamp"],
              "message": {"role": "toolResult", "toolCallId": f"{eid}-c", "toolName": "bash", "isError": True,
                          "content": [{"type": "text", "text": "make: *** [Makefile:9: all] Error 2"}],
                          "timestamp": 0}}
    return [entry, result]


async def test_a_branch_summary_keeps_the_abandoned_request_its_error_and_bash_files(tmp_path: Path) -> None:
    """Own phrasings: the request navigated back to (its text returns to the editor) and the failure of the
    branch (a tool result) are in the summary; a file moved by bash is in its lists."""
    lines = [*two_prompts()[:2], user("u2", "a1", "Port the lexer to Rust. Keep the Python API as it is.", 3),
             *failed_run("a2", "u2", 4)]
    session = Session.open(write_lines(tmp_path / "b.jsonl", lines))
    result = await navigate_tree(session, "u2", summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is not None and result.editor_text is not None
    summary = result.entry.data["summary"]
    assert "Keep the Python API as it is." in summary
    assert "make: *** [Makefile:9: all] Error 2" in summary.split("### Blocked", 1)[1]
    assert result.entry.data["details"]["modifiedFiles"] == ["a.py", "b.py"]
    assert "<modified-files>\na.py\nb.py\n</modified-files>" in summary

"""The fidelity guarantees end to end through the pipeline, with the offline summarizer and real files.

Sessions are built here turn by turn (our own development examples, several
languages); the planted-fact suite is elsewhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.pipeline.compaction import compact
from pi_sessiond.pipeline.filelists import MAX_PATHS, capped_block
from pi_sessiond.pipeline.navigation import branch_bound, navigate_tree
from pi_sessiond.pipeline.requests import for_request, head_and_tail, serialize_for_request, serialize_messages
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.offline import OfflineSummarizer

Json = dict[str, Any]
SETTINGS = CompactionSettings(keep_recent_tokens=800)


def message(role: str, **fields: Any) -> Json:
    return {"type": "message", "message": {"role": role, "timestamp": 1, **fields}}


def user(text: str) -> Json:
    return message("user", content=text)


def assistant(*blocks: Json, stop: str = "toolUse") -> Json:
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    return message("assistant", content=list(blocks), api="anthropic-messages", provider="anthropic",
                   model="claude-sonnet-4-5", usage=usage, stopReason=stop)


def tool(call_id: str, name: str, arguments: Json) -> Json:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


def result(call_id: str, name: str, text: str, *, error: bool = False) -> Json:
    return message("toolResult", toolCallId=call_id, toolName=name, isError=error,
                   content=[{"type": "text", "text": text}])


def turn(n: int, request: str) -> list[Json]:
    """One round of work: a request, a read, an edit, a bash move, a failing test, an answer."""
    filler = f"Background for step {n}: " + "the module has grown over the years. " * 100
    return [
        user(request),
        assistant({"type": "text", "text": "Looking."}, tool(f"r{n}", "read", {"path": f"src/mod_{n}.py"})),
        result(f"r{n}", "read", filler),
        assistant(tool(f"e{n}", "edit", {"path": f"src/mod_{n}.py", "oldText": "a", "newText": "b"})),
        result(f"e{n}", "edit", "Successfully replaced text."),
        assistant(tool(f"b{n}", "bash", {"command": f"git mv src/old_{n}.py src/new_{n}.py"})),
        result(f"b{n}", "bash", ""),
        assistant(tool(f"t{n}", "bash", {"command": "pytest -q"})),
        result(f"t{n}", "bash", "\n".join([*(["."] * 60), f"FAILED tests/test_{n}.py::test_case_{n} - "
                                             f"AssertionError: assert {n} == {n + 1}"]), error=True),
        assistant({"type": "text", "text": f"Step {n} is edited; test_case_{n} still fails."}, stop="stop"),
    ]


REQUESTS = [
    "Port the billing service to async. Never change the public `charge()` signature.",
    "Weiter mit dem Modul. Bitte keine neuen Abhängigkeiten hinzufügen.",
    "Continue. Il faut toujours garder les messages d'erreur en anglais.",
    "Sigue con el siguiente paso. Nunca borres los tests existentes.",
]


async def test_ten_repeated_compactions_stay_bounded_and_keep_the_hard_facts(tmp_path: Path) -> None:
    session = Session.create("/work/project", tmp_path)
    summaries: list[str] = []
    for n in range(10):
        session.append(turn(2 * n, REQUESTS[n] if n < len(REQUESTS) else f"Go on with step {n}."))
        session.append(turn(2 * n + 1, "Next file."))
        done = await compact(session, OfflineSummarizer(), settings=SETTINGS)
        summary = str(done.entry.data["summary"])
        summaries.append(summary)
        assert estimate_tokens({"role": "compactionSummary", "summary": summary}) <= 12_000
        assert summary.count("Last error:") == 1 and summary.count("Latest user request") + summary.count(
            "Last user request") == 1
    final = summaries[-1]
    assert "Port the billing service to async." in final  # the original goal survives
    for constraint in (
        "Never change the public `charge()` signature.",
        "Bitte keine neuen Abhängigkeiten hinzufügen.",
        "Il faut toujours garder les messages d'erreur en anglais.",
        "Nunca borres los tests existentes.",
    ):
        assert constraint in final, constraint
    details = done.entry.data["details"]
    assert {"src/old_3.py", "src/new_3.py", "src/mod_18.py"} <= set(details["modifiedFiles"])
    assert "src/new_0.py" in final and "src/mod_18.py" in final
    # Iterative, not additive: the summary does not grow with every round.
    sizes = [len(s) for s in summaries]
    assert sizes[-1] < 2 * sizes[4]


async def test_fix_bash_file_ops_are_tracked(tmp_path: Path) -> None:
    """Pi tracks only read/edit/write calls; files a bash command moves or deletes are lost to it."""
    session = Session.create("/work/project", tmp_path)
    session.append([*turn(0, REQUESTS[0]), user("And drop the `legacy` folder.")])
    session.append([assistant(tool("x", "bash", {"command": "rm -r legacy && echo ok > status.txt"})),
                    result("x", "bash", "ok"), assistant({"type": "text", "text": "Removed."}, stop="stop")])
    session.append(turn(1, "Go on.") + turn(2, "And on."))
    done = await compact(session, OfflineSummarizer(), settings=SETTINGS)
    details = done.entry.data["details"]
    for path in ("src/old_0.py", "src/new_0.py", "legacy", "status.txt"):
        assert path in details["modifiedFiles"] and path in done.entry.data["summary"].split("<modified-files>")[1]
    assert {("modifiedFile", "legacy"), ("modifiedFile", "status.txt")} <= {(a.kind, a.text) for a in done.gate}


def test_fix_tool_results_keep_head_and_tail() -> None:
    """Pi cuts a tool result sent for summarizing to its first 2,000 characters; the error is at the end."""
    text = "start of output\n" + "noise line\n" * 500 + "AssertionError: assert 1 == 2"
    cut = head_and_tail(text)
    assert len(cut) <= 2000 and cut.startswith("start of output") and cut.endswith("AssertionError: assert 1 == 2")
    assert "characters omitted ...]" in cut
    msgs = [{"role": "toolResult", "toolCallId": "1", "toolName": "bash", "isError": True, "timestamp": 1,
             "content": [{"type": "text", "text": text}]}]
    assert "AssertionError" in serialize_for_request(msgs) and "AssertionError" not in serialize_messages(msgs)
    short = {**msgs[0], "content": [{"type": "text", "text": "fine"}]}
    assert for_request(short) is short and head_and_tail("fine") == "fine"


def test_file_lists_are_capped_but_never_drop_files_modified_in_the_range() -> None:
    read = tuple(f"docs/r{n:03}.md" for n in range(300))
    modified = tuple(f"src/m{n:03}.py" for n in range(250))
    in_range = frozenset(modified[-220:])
    block = capped_block(read, modified, in_range)
    listed = [ln for ln in block.splitlines() if ln.startswith(("docs/", "src/"))]
    assert all(p in listed for p in in_range) and len(listed) == len(in_range) > MAX_PATHS
    assert block.endswith(f"[… {300 + 250 - len(listed)} more files not listed]")
    pi_block = "\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>"
    assert capped_block(("a",), ("b",), frozenset()) == pi_block  # under the cap: Pi's block


async def test_a_branch_summary_is_bounded(tmp_path: Path) -> None:
    session = Session.create("/work/project", tmp_path)
    session.append([user("Start here.")])
    start = session.leaf_id
    assert start is not None
    for n in range(6):
        session.append(turn(n, f"Try approach {n}: must keep the `api/v{n}` routes."))
    summarized = sum(estimate_tokens(e.message) for e in session.path_to() if e.message)
    done = await navigate_tree(session, start, summarizer=OfflineSummarizer(), summarize=True)
    assert done.entry is not None
    text = str(done.entry.data["summary"])
    assert estimate_tokens({"role": "branchSummary", "summary": text}) <= branch_bound(summarized)
    assert "Branch left" in text and "api/v5" in text


async def test_fix_a_compaction_keeps_the_files_of_a_branch_summary_in_its_range(tmp_path: Path) -> None:
    """Pi's compaction lists only tool calls: an abandoned branch's files (in its summary's file blocks) were lost."""
    session = Session.create("/work/project", tmp_path)
    session.append(turn(0, REQUESTS[0]))
    start = session.leaf_id
    session.append(turn(1, "Try the other driver.") + turn(2, "Keep going."))
    assert start is not None
    await navigate_tree(session, start, summarizer=OfflineSummarizer(), summarize=True)
    session.append(turn(3, "Back to the first driver.") + turn(4, "Go on.") + turn(5, "And on."))
    done = await compact(session, OfflineSummarizer(), settings=SETTINGS)
    details = done.entry.data["details"]
    block = done.entry.data["summary"].split("<modified-files>")[1]
    for path in ("src/mod_1.py", "src/new_1.py", "src/mod_2.py"):  # edited / moved in the abandoned branch
        assert path in details["modifiedFiles"] and path in block, path
    assert "src/mod_1.py" not in details["readFiles"]

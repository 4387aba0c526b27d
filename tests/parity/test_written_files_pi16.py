"""Files we write open in Pi 1.6.0 with the context we serve, and carry what Pi 1.6.0 writes.

Sessions with system messages (a prompt with sections and tools, a later
patch) are written by Pi 1.6.0's own ``SessionManager`` (oracle op ``write``).
On a copy we compact (offline summarizer), write a retain-none compaction (a
hook's ``firstKeptEntryId: null``) or a branch summary. Then:

- Pi 1.6.0's context of our file at its leaf is our context, message for message;
- the entry is what Pi writes for the same call (``appendCompaction`` /
  ``branchWithSummary`` replayed by the oracle on the same session): the same
  keys in the same order and the same ``systemMessage`` checkpoint, whose
  ``timestamp`` is the entry's own time in ms;
- Pi 0.73.1 still loads the file with our entries (``test_written_files_parity``
  covers its context on sessions without system messages).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import PiOracle
from tests.parity.test_projection_parity import TOOL_BASH, TOOL_READ, _m, assistant, system, tool_result, user

from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_tokens
from pi_sessiond.pipeline.compaction import compact, compaction_entry
from pi_sessiond.pipeline.navigation import navigate_tree
from pi_sessiond.store.layout import iso_ms
from pi_sessiond.store.session import Session
from pi_sessiond.summarizers.offline import OfflineSummarizer

pytestmark = pytest.mark.parity

Json = dict[str, Any]
KEEP = CompactionSettings(keep_recent_tokens=60)


def script() -> list[Json]:
    """0 S0, 1 u1, 2 a1(call), 3 tr, 4 u2, 5 a2, 6 S1 patch, 7 u3, 8 a3, 9 u4, 10 a4."""
    return [
        _m("msg", system(1, "You are Pi.", sections={"tools": "Use the tools.", "skills": "none"},
                         toolsAdded=[TOOL_READ, TOOL_BASH])),
        _m("msg", user("read a.py and explain it", 2)),
        _m("msg", assistant("reading", 3, call="c1")),
        _m("msg", tool_result("c1", "def f():\n    return 1\n" * 200, 4)),
        _m("msg", user("explain it in depth", 5)),
        _m("msg", assistant("It defines f. " * 150, 6)),
        _m("msg", system(7, sections={"skills": None, "cwd": "/w"}, toolsRemoved=[{"name": "bash"}])),
        _m("msg", user("now something else", 8)),
        _m("msg", assistant("Something else, explained. " * 40, 9)),
        _m("msg", user("and the last thing", 10)),
        _m("msg", assistant("The last thing. " * 20, 11)),
    ]


def pi_written(pi16: PiOracle, tmp_path: Path, calls: list[Json], name: str = "s.jsonl") -> Path:
    written = pi16.call("write", calls=calls)
    path = tmp_path / name
    path.write_text(written["fileText"], encoding="utf-8")
    return path


def pi_context(pi16: PiOracle, path: Path) -> Json:
    [context] = pi16.call("context", file=str(path), leafIds=["__undefined__"])
    result: Json = context
    return result


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False))


def assert_pi16_serves_our_context(pi16: PiOracle, path: Path) -> list[Json]:
    """Pi 1.6.0's context of ``path`` at its leaf equals ours; returns it."""
    ours = Session.open(path)
    theirs = pi_context(pi16, path)
    assert theirs["messages"] == as_json(list(ours.context().messages))
    assert theirs["messages"] == as_json(list(ours.projection().messages))
    loaded = pi16.call("load", file=str(path))
    assert loaded["entries"] == as_json([e.data for e in ours.entries]) and loaded["leafId"] == ours.leaf_id
    assert loaded["fileTextAfterLoad"] == path.read_text(encoding="utf-8")  # nothing for Pi to mend
    messages: list[Json] = theirs["messages"]
    return messages


def pi_entry(pi16: PiOracle, tmp_path: Path, calls: list[Json]) -> Json:
    """The last entry Pi 1.6.0 writes for ``calls``."""
    written = pi16.call("write", calls=calls)
    entry: Json = written["entries"][-1]
    return entry


def without_time(entry: Json) -> Json:
    out = {k: v for k, v in entry.items() if k not in ("id", "parentId", "timestamp")}
    if "systemMessage" in out:
        out["systemMessage"] = {k: v for k, v in out["systemMessage"].items() if k != "timestamp"}
    return out


def assert_written_as_pi_writes(ours: Json, theirs: Json) -> None:
    assert list(ours) == list(theirs)  # Pi's key order
    assert as_json(without_time(ours)) == without_time(theirs)
    if "systemMessage" in ours:
        assert ours["systemMessage"]["timestamp"] == iso_ms(ours["timestamp"])


def with_usage(entry: Json, *args: Any) -> list[Any]:
    """``args`` and the entry's usage, if it has one (a JSON ``null`` would be written by Pi)."""
    return [*args, entry["usage"]] if "usage" in entry else list(args)


def compaction_call(entry: Json, first_kept: str | None) -> Json:
    return _m("appendCompaction", *with_usage(entry, entry["summary"], first_kept, entry["tokensBefore"],
                                               entry["details"], entry["fromHook"]))


async def test_our_compaction_carries_pi16s_checkpoint(pi16: PiOracle, pi: PiOracle, tmp_path: Path) -> None:
    path = pi_written(pi16, tmp_path, script())
    session = Session.open(path)
    result = await compact(session, OfflineSummarizer(), settings=KEEP)
    entry = result.entry.data
    checkpoint = entry["systemMessage"]
    assert checkpoint["sections"] == {"tools": "Use the tools.", "cwd": "/w"}
    assert [t["name"] for t in checkpoint["toolsAdded"]] == ["read"]
    theirs = pi_entry(pi16, tmp_path, [*script(), compaction_call(entry, entry["firstKeptEntryId"])])
    assert_written_as_pi_writes(entry, theirs)
    messages = assert_pi16_serves_our_context(pi16, path)
    assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]
    assert messages[0] == as_json(checkpoint)
    assert result.tokens_after == sum(estimate_tokens(m) for m in messages)  # estimatedTokensAfter: no usage
    loaded = pi.call("load", file=str(path))  # Pi 0.73.1 still opens it
    assert loaded["entries"] == as_json([e.data for e in Session.open(path).entries])


async def test_checkpoints_chain_over_two_compactions(pi16: PiOracle, tmp_path: Path) -> None:
    path = pi_written(pi16, tmp_path, script())
    session = Session.open(path)
    await compact(session, OfflineSummarizer(), settings=KEEP)
    # Enough new work that the second compaction shrinks the context (notShrinking otherwise).
    session.append([{"type": "message", "message": system(12, sections={"lang": "en"})},
                    {"type": "message", "message": user("more work " * 400, 13)},
                    {"type": "message", "message": assistant("More done. " * 300, 14)},
                    {"type": "message", "message": user("and more", 15)},
                    {"type": "message", "message": assistant("Fine. " * 30, 16)}])
    second = (await compact(session, OfflineSummarizer(), settings=KEEP)).entry.data
    assert second["systemMessage"]["sections"] == {"tools": "Use the tools.", "cwd": "/w", "lang": "en"}
    messages = assert_pi16_serves_our_context(pi16, path)
    assert messages[0] == as_json(second["systemMessage"])
    assert sum(1 for m in messages if m["role"] == "system") == 1  # kept-range patches are folded in


async def test_a_hooks_null_first_kept_is_a_retain_none_compaction(pi16: PiOracle, tmp_path: Path) -> None:
    path = pi_written(pi16, tmp_path, script())
    session = Session.open(path)

    async def supply(prep: CompactionPreparation) -> Json:
        data = {**compaction_entry(prep, "all of it, summarized by a hook", None), "fromHook": True}
        return {**data, "firstKeptEntryId": None}

    entry = (await compact(session, OfflineSummarizer(), settings=KEEP, supply=supply)).entry.data
    assert entry["firstKeptEntryId"] == entry["id"]
    theirs = pi_entry(pi16, tmp_path, [*script(), compaction_call(entry, None)])
    assert theirs["firstKeptEntryId"] == theirs["id"]
    assert_written_as_pi_writes({**entry, "firstKeptEntryId": "(own)"}, {**theirs, "firstKeptEntryId": "(own)"})
    messages = assert_pi16_serves_our_context(pi16, path)
    assert [m["role"] for m in messages] == ["system", "compactionSummary"]  # nothing kept


async def test_our_branch_summary_is_written_as_pi16_writes_it(pi16: PiOracle, tmp_path: Path) -> None:
    path = pi_written(pi16, tmp_path, script())
    session = Session.open(path)
    target = session.entries[5]  # a2: u3 .. a4 (and the S1 patch) are left behind
    result = await navigate_tree(session, target.id, summarizer=OfflineSummarizer(), summarize=True)
    assert result.entry is not None
    entry = result.entry.data
    call = _m("branchWithSummary", *with_usage(entry, target.id, entry["summary"], entry["details"],
                                               entry["fromHook"]))
    theirs = pi_entry(pi16, tmp_path, [*script(), call])
    assert_written_as_pi_writes(entry, theirs)
    assert theirs["fromId"] == entry["fromId"] == result.old_leaf_id
    messages = assert_pi16_serves_our_context(pi16, path)
    assert messages[0]["role"] == "system" and messages[-1]["role"] == "branchSummary"

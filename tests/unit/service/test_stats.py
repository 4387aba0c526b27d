"""``pi/getStats`` as Pi 1.6.0's ``getSessionStats`` and ``estimateProjectedContextTokens``.

Pi 1.6.0's ``getSessionStats`` lives in ``dist/core/agent-session.js``, which
does not load on the Node 20 the parity oracle runs on, so these tests check
Pi 1.6.0's rules on hand-built sessions:
totals over every entry of the file (other branches and compacted-away
messages included) of assistant and tool-result usage, ``usage`` entries and
compaction and branch-summary usage; message counts over every message entry
(system included in ``totalMessages``); the projected estimate distrusts usage
older than the newest ``context_edit`` or compaction.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_protocol.settings import Settings
from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.service.stats import projected_context_tokens, session_stats
from pi_sessiond.store.session import Session
from pi_sessiond.store.system import current_system_message

Json = dict[str, Any]
HEADER = {"type": "session", "version": 3, "id": "0190a000-0000-7000-8000-000000000001",
          "timestamp": "2026-11-20T00:00:00.000Z", "cwd": "/w"}


def usage(inp: int, out: int, read: int = 0, write: int = 0, cost: float = 0.0) -> Json:
    return {"input": inp, "output": out, "cacheRead": read, "cacheWrite": write,
            "totalTokens": inp + out + read + write,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}}


def entry(eid: str, parent: str | None, type_: str, **fields: Any) -> Json:
    return {"type": type_, "id": eid, "parentId": parent, "timestamp": "2026-11-20T00:00:01.000Z", **fields}


def message(eid: str, parent: str | None, role: str, **fields: Any) -> Json:
    return entry(eid, parent, "message", message={"role": role, "timestamp": 1, **fields})


def assistant(eid: str, parent: str, text: str, used: Json, calls: int = 0) -> Json:
    content: list[Json] = [{"type": "text", "text": text}]
    content += [{"type": "toolCall", "id": f"{eid}-{n}", "name": "read", "arguments": {}} for n in range(calls)]
    return message(eid, parent, "assistant", content=content, provider="p", model="m", usage=used,
                   stopReason="toolUse" if calls else "stop")


def write(tmp_path: Path, entries: list[Json]) -> Session:
    path = tmp_path / "s.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [HEADER, *entries]), encoding="utf-8")
    return Session.open(path)


def branched(tmp_path: Path) -> Session:
    """s0 u1 a1(2 calls) t1 | w(usage) | a side branch u9 a9 and its summary | c(compaction) u2 a2."""
    return write(tmp_path, [
        message("s0", None, "system", content="You are Pi.", sections={"tools": "t"}),
        message("u1", "s0", "user", content="hi"),
        assistant("a1", "u1", "reading", usage(100, 20, 5, 3, 0.1), calls=2),
        message("t1", "a1", "toolResult", toolCallId="a1-0", toolName="read", content=[{"type": "text", "text": "x"}],
                isError=False, usage=usage(7, 1, cost=0.01)),
        entry("w", "t1", "usage", kind="cache_warm", provider="p", model="m", usage=usage(50, 0, 40, 0, 0.02)),
        message("u9", "w", "user", content="a side question"),
        assistant("a9", "u9", "side answer", usage(11, 2, cost=0.005)),
        entry("b", "w", "branch_summary", fromId="a9", summary="the side branch", usage=usage(9, 4, cost=0.004)),
        entry("c", "b", "compaction", summary="all before", firstKeptEntryId="b", tokensBefore=500,
              usage=usage(30, 10, 2, 1, 0.03)),
        message("u2", "c", "user", content="and now?"),
        message("x", "u2", "bashExecution", command="ls", output="a", exitCode=0, cancelled=False, truncated=False),
        assistant("a2", "x", "now this", usage(200, 30, 100, 0, 0.2)),
    ])


def test_totals_cover_every_entry_of_the_file(tmp_path: Path) -> None:
    stats = session_stats(branched(tmp_path), Settings())
    tokens = stats.tokens
    # a1 + t1 + w + a9 (another branch) + b + c + a2
    assert tokens.input == 100 + 7 + 50 + 11 + 9 + 30 + 200
    assert tokens.output == 20 + 1 + 0 + 2 + 4 + 10 + 30
    assert tokens.cache_read == 5 + 40 + 2 + 100 and tokens.cache_write == 3 + 1
    assert tokens.total == tokens.input + tokens.output + tokens.cache_read + tokens.cache_write
    assert stats.cost == pytest.approx(0.1 + 0.01 + 0.02 + 0.005 + 0.004 + 0.03 + 0.2)


def test_message_counts_cover_every_message_entry(tmp_path: Path) -> None:
    counts = session_stats(branched(tmp_path), Settings()).message_counts
    assert counts == {"userMessages": 3, "assistantMessages": 3, "toolCalls": 2, "toolResults": 1,
                      "totalMessages": 9}  # s0 (system) and x (bashExecution) count only in the total


def test_after_a_compaction_context_tokens_is_null_and_the_estimate_is_projected(tmp_path: Path) -> None:
    session = write(tmp_path, [
        message("s0", None, "system", content="You are Pi. " * 20),
        message("u1", "s0", "user", content="hi " * 50),
        assistant("a1", "u1", "hello " * 50, usage(9000, 20)),
        entry("c", "a1", "compaction", summary="all before", firstKeptEntryId="u1", tokensBefore=9020,
              systemMessage={"role": "system", "content": "You are Pi. " * 20, "timestamp": 5}),
        message("s1", "c", "system", content="", sections={"cwd": "/w"}),
    ])
    stats = session_stats(session, Settings())
    messages = session.projection().messages
    assert [m["role"] for m in messages] == ["system", "compactionSummary", "user", "assistant", "system"]
    pure = sum(estimate_tokens(m) for m in messages if m.get("role") != "system")
    system = current_system_message(messages)  # the checkpoint and the patch, replayed once
    assert system is not None and system["sections"] == {"cwd": "/w"}
    assert stats.context_tokens is None and stats.context_percent is None
    assert stats.estimated_context_tokens == estimate_tokens(system) + pure < 9000


def test_usage_before_a_context_edit_is_not_trusted(tmp_path: Path) -> None:
    rows = [
        message("u1", None, "user", content="read it"),
        assistant("a1", "u1", "ok", usage(12000, 10)),
        message("u2", "a1", "user", content="next"),
    ]
    fresh = write(tmp_path, rows)
    messages = fresh.projection().messages
    assert projected_context_tokens(fresh, "pi") == 12010 + estimate_tokens(messages[-1])
    edited = write(tmp_path, [*rows, entry("e", "u2", "context_edit", targetId="u1", replacement=None)])
    messages = edited.projection().messages
    assert [m["role"] for m in messages] == ["assistant", "user"]  # u1 omitted
    assert projected_context_tokens(edited, "pi") == sum(estimate_tokens(m) for m in messages) < 100
    stats = session_stats(edited, Settings())
    assert stats.estimated_context_tokens == stats.context_tokens  # no compaction: Pi reports the estimate


@pytest.mark.parametrize("shape", ["linear", "branchy", "kitchen-sink", "long"])
def test_the_fast_leaf_walk_agrees_with_pi_s_projected_estimate_at_every_leaf(tmp_path: Path, shape: str) -> None:
    """``projected_context_tokens`` (a walk up from the leaf, cheap enough for every ``pi/append``) and the
    preparation's ``estimate_projected_context_tokens`` (Pi 1.6.0's, differential-tested) give one answer."""
    from pi_sessiond.compaction.tokens import estimate_projected_context_tokens
    from pi_sessiond.examples import generator

    path = tmp_path / f"{shape}.jsonl"
    generator.write(path, generator.generate(seed=9, entries=150, shape=shape))
    session = Session.open(path)
    for leaf in session.entries[::7]:
        pi = estimate_projected_context_tokens(session.projection(leaf.id), session.path_to(leaf.id)).tokens
        assert projected_context_tokens(session, "pi", leaf.id) == pi, leaf.id

"""Differential tests: our projection and context vs Pi 1.6.0's (through ``oracle16.mjs``).

Two kinds of sessions, context (messages, thinking level, model), projection
entries (source ids, per-entry messages) and the replayed current system
message compared at every entry as identical JSON:

1. sessions from our generator (all v3 shapes; no 1.6.0-only content, so the
   1.6.0 and 0.73.1 contexts agree there);
2. sessions written by Pi 1.6.0's own ``SessionManager`` (``write`` op): system
   messages with section/tool patches, ``context_edit`` replacements and
   omissions (overflow-recovery style included), ``usage`` entries, checkpointed
   and retain-none compactions, branches with summaries, labels, null content.

The live context is checked too: appending the Pi-written entries one by one
under the leaf gives, after each, exactly the fresh projection.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import PiOracle

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.livecontext import LiveContext
from pi_sessiond.store.projection import project_path
from pi_sessiond.store.session import Session
from pi_sessiond.store.system import current_system_message
from pi_sessiond.store.tree import SessionTree

pytestmark = pytest.mark.parity
Json = dict[str, Any]


def _canon(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def our_context(session: Session, leaf: str) -> Json:
    """Our answer to the oracle's ``context`` op at ``leaf``, from our projection (the same keys)."""
    projection = session.projection(leaf)
    messages = list(projection.messages)
    return {"messages": messages, "thinkingLevel": projection.thinking_level, "model": projection.model,
            "entries": [{"id": p.entry.id, "type": p.entry.type, "messages": list(p.messages)}
                        for p in projection.entries],
            "systemMessage": current_system_message(messages)}


def assert_contexts_match(pi16: PiOracle, path: Path) -> int:
    """Compare every entry's context and projection; return how many leaves were compared."""
    session = Session.open(path)
    leaves = [e.id for e in session.entries]
    theirs = pi16.call("context", file=str(path), leafIds=leaves)
    for leaf, pi in zip(leaves, theirs, strict=True):
        ours = our_context(session, leaf)
        where = f"{path.name} at {leaf}"
        assert _canon(ours["messages"]) == _canon(pi["messages"]), where
        assert (ours["thinkingLevel"], ours["model"]) == (pi["thinkingLevel"], pi["model"]), where
        assert _canon(ours["entries"]) == _canon(pi["entries"]), where
        assert _canon(ours["systemMessage"]) == _canon(pi["systemMessage"]), where
        assert _canon(list(session.context(leaf).messages)) == _canon(pi["messages"]), where
    return len(leaves)


@pytest.mark.parametrize(("shape", "seed", "entries"), [("linear", 1, 60), ("branchy", 7, 80),
                                                        ("kitchen-sink", 10, 90), ("long", 4, 400),
                                                        ("pi16", 5, 400)])
def test_generated_sessions_at_every_entry(pi16: PiOracle, tmp_path: Path, shape: str, seed: int,
                                           entries: int) -> None:
    path = tmp_path / f"{shape}.jsonl"
    every = 150 if shape in ("long", "pi16") else None
    write(path, generate(seed=seed, entries=entries, shape=shape, compaction_every=every))
    assert assert_contexts_match(pi16, path) > 50


# ----------------------------------------------------- sessions Pi 1.6.0 wrote
TOOL_READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object"}}
TOOL_BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object"}}
USAGE = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120,
         "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}


def _m(method: str, *args: Any) -> Json:
    return {"method": "appendMessage" if method == "msg" else method, "args": list(args)}


def _ref(n: int) -> Json:
    return {"$ref": n}


def system(ts: int, content: str = "", **extra: Any) -> Json:
    return {"role": "system", "content": content, **extra, "timestamp": ts}


def user(text: Any, ts: int) -> Json:
    return {"role": "user", "content": text, "timestamp": ts}


def assistant(text: str, ts: int, *, call: str | None = None, stop: str = "stop") -> Json:
    content: list[Json] = [{"type": "thinking", "thinking": "hmm", "thinkingSignature": "s"},
                           {"type": "text", "text": text}]
    if call:
        content.append({"type": "toolCall", "id": call, "name": "read", "arguments": {"path": "a.py"}})
    return {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
            "model": "claude-x", "responseModel": "claude-x-2026", "responseId": f"r{ts}", "thinkingLevel": "high",
            "usage": USAGE, "stopReason": "toolUse" if call else stop, "durationMs": 1234, "timestamp": ts}


def tool_result(call: str, text: str, ts: int) -> Json:
    return {"role": "toolResult", "toolCallId": call, "toolName": "read", "content": [{"type": "text", "text": text}],
            "isError": False, "durationMs": 5, "usage": USAGE, "timestamp": ts}


def script_edits_and_checkpoints() -> list[Json]:
    """0 model, 1 S0, 2 u1, 3 a1(call), 4 tr, 5 edit tr, 6 edit tr again, 7 u2, 8 a2, 9 S1 patch,
    10 omit u2, 11 omit a2, 12 usage, 13 compaction keeping from 7, 14 u3, 15 a3, 16 retain-none, 17 u4."""
    return [
        _m("appendModelChange", "anthropic", "claude-x"),
        _m("msg", system(1, "You are Pi.", sections={"tools": "Use the tools.", "skills": "none"},
                         toolsAdded=[TOOL_READ, TOOL_BASH])),
        _m("msg", user("read a.py", 2)),
        _m("msg", assistant("reading", 3, call="c1")),
        _m("msg", tool_result("c1", "x" * 4000, 4)),
        _m("appendContextEdit", _ref(4), {"content": "[elided]"}),
        _m("appendContextEdit", _ref(4), {"content": "[elided twice]"}),
        _m("msg", user("an aside", 5)),
        _m("msg", assistant("aside answer", 6)),
        _m("msg", system(7, sections={"skills": None, "cwd": "/w"}, toolsRemoved=[{"name": "bash"}])),
        _m("appendContextEdit", _ref(7), None),
        _m("appendContextEdit", _ref(8), None),
        _m("appendUsage", "cache_warm", "anthropic", "claude-x", USAGE, "warm"),
        _m("appendCompaction", "summary one", _ref(7), 5000, {"readFiles": ["a.py"], "modifiedFiles": []}, False,
           USAGE),
        _m("msg", user([{"type": "text", "text": "next"}], 8)),
        _m("msg", assistant("ok", 9)),
        _m("appendCompaction", "summary two", None, 6000),
        _m("msg", user("after retain-none", 10)),
    ]


def script_branches_and_recovery() -> list[Json]:
    """A branch summary, labels, thinking changes, recovery omissions, custom messages, null content."""
    return [
        _m("msg", system(1, "Base prompt.", toolsAdded=[TOOL_READ])),
        _m("msg", user("first", 2)),                                # 1
        _m("msg", assistant("first answer", 3)),                    # 2
        _m("appendLabelChange", _ref(1), "start"),                  # 3
        _m("appendThinkingLevelChange", "high"),                    # 4
        _m("msg", user("a huge input", 4)),                         # 5
        _m("msg", assistant("", 5, call="c9", stop="length")),      # 6
        _m("msg", tool_result("c9", "partial", 6)),                 # 7
        _m("appendContextEdit", _ref(6), None),                     # 8
        _m("appendContextEdit", _ref(7), None),                     # 9
        _m("appendCustomMessageEntry", "note", "remember this", True, {"k": 1}),  # 10
        _m("appendContextEdit", _ref(10), {"content": "remember less"}),            # 11
        _m("appendCustomMessageEntry", "empty", None, False),       # 12
        _m("msg", {"role": "user", "content": None, "timestamp": 7}),               # 13
        _m("msg", {"role": "assistant", "content": None, "provider": "p", "model": "m", "timestamp": 8}),  # 14
        _m("msg", {"role": "system", "content": None, "timestamp": 9}),             # 15
        _m("branchWithSummary", _ref(2), "we tried the huge input", {"readFiles": []}, False, USAGE),   # 16
        _m("msg", user("on the branch", 10)),                       # 17
        _m("appendContextEdit", _ref(1), {"content": "first (edited on the branch)"}),                  # 18
        _m("appendModelChange", "openai", "gpt-x"),                 # 19
        _m("msg", assistant("branch answer", 11)),                  # 20
        _m("appendSessionInfo", "a\nname"),                         # 21
    ]


@pytest.fixture(params=["edits_and_checkpoints", "branches_and_recovery"])
def pi_written(request: pytest.FixtureRequest, pi16: PiOracle, tmp_path: Path) -> Path:
    script = {"edits_and_checkpoints": script_edits_and_checkpoints,
              "branches_and_recovery": script_branches_and_recovery}[request.param]()
    written = pi16.call("write", calls=script)
    path = tmp_path / f"{request.param}.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    return path


def test_pi_written_sessions_at_every_entry(pi16: PiOracle, pi_written: Path) -> None:
    assert assert_contexts_match(pi16, pi_written) >= 18


def test_the_checkpoint_leads_and_edits_hold(pi16: PiOracle, tmp_path: Path) -> None:
    written = pi16.call("write", calls=script_edits_and_checkpoints()[:14])
    path = tmp_path / "s.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    messages = Session.open(path).context().messages
    assert [m["role"] for m in messages] == ["system", "compactionSummary"]  # u2, a2 omitted, S1 folded in
    assert messages[0]["sections"] == {"tools": "Use the tools.", "cwd": "/w"}
    assert [t["name"] for t in messages[0]["toolsAdded"]] == ["read"]


def test_new_fields_are_kept_byte_for_byte(pi_written: Path) -> None:
    session = Session.open(pi_written)
    original = pi_written.read_bytes()
    session.append([{"type": "session_info", "name": "x"}])
    assert pi_written.read_bytes().startswith(original)


def test_live_context_follows_every_append_including_edits(pi_written: Path) -> None:
    entries = Session.open(pi_written).entries
    tree = SessionTree()
    live = LiveContext(tree)
    rebuilt = 0
    for entry in entries:
        fresh = Entry.from_data(dict(entry.data))
        before = live.get() if tree.leaf_id is not None else None
        snapshot = list(before.messages) if before is not None else []
        tree.add(fresh)
        live.on_append(fresh)
        expected = project_path(tree.path())
        assert _canon(list(live.get().messages)) == _canon(expected.messages), entry.id
        assert [p.entry.id for p in live.projected_entries()] == [p.entry.id for p in expected.entries]
        if before is not None:  # an old snapshot never changes
            assert list(before.messages) == snapshot
        rebuilt += entry.type == "compaction"
    assert rebuilt >= 1 or all(e.type != "compaction" for e in entries)

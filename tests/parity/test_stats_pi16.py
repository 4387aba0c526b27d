"""Differential tests: ``pi/getStats`` vs Pi 1.6.0's own ``AgentSession.getSessionStats``.

Pi's method runs on Node 24 (``agent-session.js`` needs Node >= 22.19) with a
minimal ``this``: the opened ``SessionManager`` and a model of our context
window, so its ``getContextUsage`` (tokens ``null`` after a compaction until a
fresh usage, else the projected estimate) is compared too. Sessions: the real
fixture, our generator's shapes, and sessions Pi 1.6.0 itself wrote (usage
entries, compaction and branch-summary usage, tool-result usage, context edits
omitting the only fresh assistant after a compaction, aborted answers).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import OracleError, PiOracle
from tests.parity.test_projection_parity import (
    USAGE,
    _m,
    _ref,
    assistant,
    script_branches_and_recovery,
    script_edits_and_checkpoints,
    tool_result,
    user,
)

from pi_protocol.settings import Settings
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.service.stats import session_stats
from pi_sessiond.store.session import Session

pytestmark = pytest.mark.parity
Json = dict[str, Any]


def assert_stats_match(pi16_agent: PiOracle, path: Path, pi_path: Path | None = None) -> Json:
    """Our stats of ``path`` against Pi's of ``pi_path`` (default: the same file); returns Pi's."""
    ours = session_stats(Session.open(path), Settings())
    theirs = pi16_agent.call("stats", file=str(pi_path or path), contextWindow=ours.context_window)
    counts = {k: theirs[k] for k in ("userMessages", "assistantMessages", "toolCalls", "toolResults", "totalMessages")}
    assert ours.message_counts == counts
    tokens = ours.tokens
    assert (tokens.input, tokens.output, tokens.cache_read, tokens.cache_write, tokens.total) == (
        theirs["tokens"]["input"], theirs["tokens"]["output"], theirs["tokens"]["cacheRead"],
        theirs["tokens"]["cacheWrite"], theirs["tokens"]["total"])
    assert ours.cost == pytest.approx(theirs["cost"])
    usage = theirs["contextUsage"]
    assert ours.context_window == usage["contextWindow"]
    assert ours.context_tokens == usage["tokens"]
    if usage["percent"] is None:
        assert ours.context_percent is None
    else:
        assert ours.context_percent == pytest.approx(usage["percent"])
    return theirs


def test_the_real_fixture(pi16_agent: PiOracle, pi_fixture_path: Path) -> None:
    theirs = assert_stats_match(pi16_agent, pi_fixture_path)
    assert theirs["assistantMessages"] > 100 and theirs["tokens"]["total"] > 0


@pytest.mark.parametrize(("shape", "seed", "entries"), [("linear", 1, 60), ("branchy", 7, 120),
                                                        ("kitchen-sink", 10, 90), ("long", 4, 400),
                                                        ("pi16", 5, 900)])
def test_generated_sessions(pi16_agent: PiOracle, tmp_path: Path, shape: str, seed: int, entries: int) -> None:
    path = tmp_path / f"{shape}.jsonl"
    every = 150 if shape in ("long", "pi16") else None
    write(path, generate(seed=seed, entries=entries, shape=shape, compaction_every=every))
    assert_stats_match(pi16_agent, path)


def script_fresh_answer_omitted() -> list[Json]:
    """After a compaction, the only assistant with usage is omitted by an edit; an aborted one follows."""
    aborted = {**assistant("cut short", 9), "stopReason": "aborted"}
    return [*script_edits_and_checkpoints()[:14],
            _m("msg", user("after", 7)),                     # 14
            _m("msg", assistant("fresh", 8, call="c2")),     # 15
            _m("msg", tool_result("c2", "out", 9)),          # 16
            _m("appendContextEdit", _ref(15), None),         # 17
            _m("msg", aborted),                              # 18
            _m("appendUsage", "summary", "anthropic", "claude-x", USAGE, "extra")]


def script_branches_with_usage() -> list[Json]:
    """``script_branches_and_recovery`` with usage on its content-less assistant (see the test_fix_ below)."""
    calls = script_branches_and_recovery()
    calls[14]["args"][0] = {**calls[14]["args"][0], "usage": USAGE}
    return calls


SCRIPTS = {"edits_and_checkpoints": script_edits_and_checkpoints,
           "branches_and_recovery": script_branches_with_usage,
           "fresh_answer_omitted": script_fresh_answer_omitted}


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_sessions_pi_wrote(pi16_agent: PiOracle, tmp_path: Path, name: str) -> None:
    written = pi16_agent.call("write", calls=SCRIPTS[name]())
    path = tmp_path / f"{name}.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    theirs = assert_stats_match(pi16_agent, path)
    assert theirs["tokens"]["total"] > 0


def test_fix_stats_of_an_answer_without_usage(pi16_agent: PiOracle, tmp_path: Path) -> None:
    """Pi 1.6.0's ``getSessionStats`` throws on an assistant message without ``usage`` (its
    ``/session`` fails); we count the message and add no tokens (docs/deviations.md)."""
    written = pi16_agent.call("write", calls=script_branches_and_recovery())
    path = tmp_path / "no-usage.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    with pytest.raises(OracleError, match="reading 'input'"):
        pi16_agent.call("stats", file=str(path), contextWindow=200_000)
    ours = session_stats(Session.open(path), Settings())
    fixed = tmp_path / "with-usage.jsonl"
    fixed.write_text(pi16_agent.call("write", calls=script_branches_with_usage())["fileText"], encoding="utf-8")
    theirs = pi16_agent.call("stats", file=str(fixed), contextWindow=200_000)
    assert ours.message_counts["assistantMessages"] == theirs["assistantMessages"]
    assert ours.tokens.total == theirs["tokens"]["total"] - USAGE["totalTokens"]


def test_fix_stats_of_a_usage_without_cost(pi16_agent: PiOracle, tmp_path: Path) -> None:
    """Pi 1.6.0's ``getSessionStats`` throws on a ``usage`` without ``cost`` (files of other tools
    have them); we add its tokens and no cost (docs/deviations.md)."""
    no_cost = {k: v for k, v in USAGE.items() if k != "cost"}
    calls = [_m("msg", user("hi", 1)), _m("msg", {**assistant("hello", 2), "usage": no_cost})]
    path = tmp_path / "no-cost.jsonl"
    path.write_text(pi16_agent.call("write", calls=calls)["fileText"], encoding="utf-8")
    with pytest.raises(OracleError, match="reading 'total'"):
        pi16_agent.call("stats", file=str(path), contextWindow=200_000)
    calls[1]["args"][0]["usage"] = USAGE  # the same tokens, cost 0
    fixed = tmp_path / "with-cost.jsonl"
    fixed.write_text(pi16_agent.call("write", calls=calls)["fileText"], encoding="utf-8")
    theirs = assert_stats_match(pi16_agent, path, fixed)
    assert theirs["tokens"]["total"] == USAGE["input"] + USAGE["output"]

"""Differential: the context a tail-first open serves (``store/tailopen.py``) vs Pi 1.6.0's of the whole file.

Pi's side is ``SessionManager.open`` + ``buildSessionContext`` at the leaf
(through ``oracle16.mjs``); ours reads only the file's end (``min_bytes=1``).
Sessions from our generator and one written by Pi 1.6.0's own API: a thinking
level set once at the start (so it is the guess from before the tail), system
messages with patches, a checkpointed compaction, context edits of kept
entries and a long chain after it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import PiOracle
from tests.parity.test_projection_parity import _m, _ref, assistant, script_edits_and_checkpoints, user

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.session import Session
from pi_sessiond.store.tailopen import open_tail

pytestmark = pytest.mark.parity


def assert_tail_context_is_pis(pi16: PiOracle, path: Path) -> bool:
    """Our tail-first context of the leaf equals Pi's; returns whether the thinking level was the guess."""
    tail = open_tail(path, 1 << 40, min_bytes=1)
    assert tail is not None, "the file should open tail-first"
    ours = tail.context(Session(tail.header, tail.tree, path).context())
    (pi,) = pi16.call("context", file=str(path), leafIds=[tail.tree.leaf_id])
    assert json.dumps(list(ours.messages), ensure_ascii=False) == json.dumps(pi["messages"], ensure_ascii=False)
    assert (ours.thinking_level, ours.model) == (pi["thinkingLevel"], pi["model"])
    return tail.speculated


@pytest.mark.parametrize(("shape", "seed", "entries", "every"), [("long", 4, 3000, 800), ("pi16", 5, 3000, 700),
                                                                 ("pi16", 6, 1800, 400)])
def test_generated_sessions(pi16: PiOracle, tmp_path: Path, shape: str, seed: int, entries: int, every: int) -> None:
    path = tmp_path / f"{shape}.jsonl"
    write(path, generate(seed=seed, entries=entries, shape=shape, compaction_every=every))
    assert_tail_context_is_pis(pi16, path)


def pi_written_long() -> list[dict[str, Any]]:
    calls = script_edits_and_checkpoints()[:14]  # ... S1 patch, omissions, usage, compaction keeping from u2
    calls = _inserted(calls, 7, _m("msg", user("an old request " + "o" * 60_000, 2)))  # summarized away
    calls = _inserted(calls, 1, _m("appendThinkingLevelChange", "high"))  # only before the tail
    for i in range(40):  # the chain after the compaction: 80 messages, two of them edited
        calls += [_m("msg", user(f"question {i} " + "q" * 300, 100 + 2 * i)),
                  _m("msg", assistant(f"answer {i} " + "a" * 300, 101 + 2 * i))]
    return [*calls, _m("appendContextEdit", _ref(len(calls) - 3), {"content": "[edited]"}),
            _m("appendContextEdit", _ref(len(calls) - 4), None), _m("msg", user("last", 999))]


def _inserted(calls: list[dict[str, Any]], at: int, call: dict[str, Any]) -> list[dict[str, Any]]:
    """``call`` inserted before ``calls[at]``; references (``$ref``: a call's index) moved to match."""
    def shift(arg: Any) -> Any:
        return {"$ref": arg["$ref"] + 1} if isinstance(arg, dict) and arg.get("$ref", -1) >= at else arg
    moved = [{**c, "args": [shift(a) for a in c["args"]]} for c in calls]
    return [*moved[:at], call, *moved[at:]]


def test_a_session_pi_wrote(pi16: PiOracle, tmp_path: Path) -> None:
    written = pi16.call("write", calls=pi_written_long())
    path = tmp_path / "pi.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    assert assert_tail_context_is_pis(pi16, path)  # the level set at the start, from before the tail

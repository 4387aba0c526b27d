"""Deeply nested entries against Pi 1.6.0: the same context, the same estimates, or a named fix.

Pi's ``JSON.parse`` reads any depth, but its ``JSON.stringify`` (hence the
oracle's reply, Pi's token estimate of tool-call arguments and its serializer)
overflows V8's stack between 3,000 and 5,000 levels. So: at 3,000 levels the
oracle returns everything and we compare it whole; at 20,000 (twice the
issue's 10,000) the oracle cannot reply with the context, so we compare what
it says about it (roles, depth of every message) from a small script on Pi's
own ``SessionManager``, and Pi's estimate of the deep tool call throws where
ours counts (``test_fix_*``).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from tests.parity.oracle import OracleError, PiOracle
from tests.unit.store.test_deep_json import deep_session, depth_of

from pi_sessiond.compaction.tokens import estimate_tokens
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.store.session import Session

PI_DIST = Path(__file__).parent / "node_modules" / "@earendil-works" / "pi-coding-agent" / "dist" / "core"
DEPTH_SCRIPT = """
import { pathToFileURL } from "node:url";
const { SessionManager } = await import(pathToFileURL(process.argv[1] + "/session-manager.js").href);
const depth = (v) => { let deepest = 0; const stack = [[v, 1]];
  while (stack.length) { const [n, d] = stack.pop();
    if (n !== null && typeof n === "object") { deepest = Math.max(deepest, d);
      for (const c of Object.values(n)) stack.push([c, d + 1]); } }
  return deepest; };
const sm = SessionManager.open(process.argv[2], process.argv[3]);
const ctx = sm.buildSessionContext();
console.log(JSON.stringify({entries: sm.getEntries().length,
  messages: ctx.messages.map((m) => [m.role, depth(m)])}));
"""


def test_3000_levels_context_and_estimates_equal_pi(pi16: PiOracle, tmp_path: Path) -> None:
    path = deep_session(tmp_path / "s.jsonl", 3_000)
    [pi_context] = pi16.call("context", file=str(path))
    ours = Session.open(path).context()
    messages = list(ours.messages)
    assert dumps(messages) == dumps(pi_context["messages"])  # `==` itself would recurse that deep
    estimate = pi16.call("estimate", messages=messages)
    assert [estimate_tokens(m) for m in messages] == estimate["perMessage"]


def test_20000_levels_open_and_context_as_pi_serves_them(pi16: PiOracle, tmp_path: Path) -> None:
    path = deep_session(tmp_path / "s.jsonl", 20_000)
    copy = tmp_path / "pi" / "s.jsonl"
    copy.parent.mkdir()
    copy.write_bytes(path.read_bytes())
    proc = subprocess.run(["node", "--input-type=module", "-e", DEPTH_SCRIPT, str(PI_DIST), str(copy),
                           str(tmp_path / "pi")], capture_output=True, text=True, timeout=120, check=True)
    pi = json.loads(proc.stdout)
    session = Session.open(path)
    assert pi["entries"] == len(session.entries) == 3
    assert [[m["role"], depth_of(m)] for m in session.context().messages] == pi["messages"]
    assert pi["messages"][1][1] > 20_000  # the tool call's arguments really are that deep in Pi too


def test_fix_tokens_of_tool_arguments_too_deep_for_javascript(pi16: PiOracle, tmp_path: Path) -> None:
    """Pi's estimate stringifies the arguments and overflows V8's stack; we count their JSON text."""
    messages = list(Session.open(deep_session(tmp_path / "s.jsonl", 20_000)).context().messages)
    with pytest.raises(OracleError, match="Maximum call stack size exceeded"):
        pi16.call("estimate", messages=[messages[1]])
    assert estimate_tokens(messages[1]) > 20_000 // 2
    assert pi16.call("estimate", messages=[messages[2]])["perMessage"] == [estimate_tokens(messages[2])]

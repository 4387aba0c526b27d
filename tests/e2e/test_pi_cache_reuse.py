"""Cache-aware compaction with the real Pi 1.6.0 agent (RPC mode, Node 24) and the extension loaded.

Pi's model is the loopback provider (OpenAI Chat Completions, ``models.json`` custom provider),
whose prefix cache bills as OpenAI's does; the daemons' summarizer is the same model there. The
extension hands every request Pi sends to the daemon (``before_provider_request`` ->
``pi/recordRequest``); Pi's threshold compaction then asks the daemon for its summary.

Checked: with ``summarizer.cacheReuse: "auto"`` the history request of Pi's threshold compaction
is Pi's last request plus one user message, >= 90% of its prompt tokens are read from the cache,
and its billed input is at most half the serialized request's (measured on the same leaf with
the daemon's dry run); the summary keeps its headings, Pi writes it and the file reopens in Pi
(``switch_session``); with ``"off"`` the request is today's serialized one.
Skipped (failed under CI) only when Node 24 or Pi 1.6.0 is missing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from tests.e2e.test_pi_extension import PiRpc, Started, extension, session_of, start_pi  # noqa: F401 - fixtures
from tests.loopback_provider import RecordedRequest, count_tokens

from pi_sessiond.compaction.prompts import SUMMARIZATION_SYSTEM_PROMPT

PROMPT = "Please explain the parser module in detail, step by step, with its edge cases. " * 130  # ~2.6k tokens
PRICE_INPUT, PRICE_CACHED = 1.0, 0.1  # the billed-input weights of a prefix-cached OpenAI request


@pytest.fixture
def pi_with(start_pi: Callable[..., Started]) -> Callable[[str], Started]:  # noqa: F811 - the fixture
    """``pi_with(cache_reuse)``: Pi with the extension and its model on the loopback; the daemons summarize
    with that model too."""

    def start(cache_reuse: str) -> Started:
        return start_pi(model_summarizer={"contextWindow": 32000, "cacheReuse": cache_reuse}, window=12000,
                        max_tokens=1000, reserve=2000, keep=2000)

    return start


def threshold_compaction(rpc: PiRpc) -> dict[str, Any]:
    """Prompt until Pi compacts at its threshold (window 12000, reserve 2000); its ``compaction_end``."""
    for n in range(12):
        rpc.prompt(f"Message {n}: {PROMPT}")
        ends = [r for r in rpc.seen("compaction_end") if r.get("reason") == "threshold"]
        if ends:
            return ends[0]
    pytest.fail("Pi never compacted at its threshold")


def is_replay(request: RecordedRequest) -> bool:
    last = (request.body.get("messages") or [{}])[-1]
    return isinstance(last.get("content"), str) and "Do not call any tool" in last["content"]


def is_serialized(request: RecordedRequest) -> bool:
    messages = request.body.get("messages") or []
    return bool(messages) and messages[0].get("content") == SUMMARIZATION_SYSTEM_PROMPT


def billed(request: RecordedRequest) -> float:
    usage = request.usage or {}
    cached = usage["prompt_tokens_details"]["cached_tokens"]
    return (usage["prompt_tokens"] - cached) * PRICE_INPUT + cached * PRICE_CACHED


def serialized_tokens(path: Path, first_kept: str) -> int:
    """The loopback's prompt tokens of the serialized history request for the leaf Pi compacted
    (a copy of the file up to the compaction, the daemon's dry run)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cut = next(i for i, row in enumerate(rows) if row.get("type") == "compaction")
    copy = path.parent.parent / "before-compaction.jsonl"
    copy.write_text("".join(json.dumps(row) + "\n" for row in rows[:cut]))
    done = subprocess.run([sys.executable, "-m", "pi_sessiond", "compact", str(copy), "--dry-run", "--json",
                           "--keep-recent-tokens", "2000"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    preview = json.loads(done.stdout)
    assert preview["firstKeptEntryId"] == first_kept
    history = next(r for r in preview["requests"] if r["purpose"] == "history")
    return count_tokens(history["systemPrompt"]) + count_tokens(history["prompt"])


def test_pis_threshold_compaction_replays_its_cached_request(pi_with: Callable[[str], Started]) -> None:
    rpc, loopback = pi_with("auto")
    end = threshold_compaction(rpc)
    assert end.get("result") and not end.get("errorMessage"), end
    requests = loopback.requests
    replays = [r for r in requests if is_replay(r)]
    assert len(replays) == 1, [r.body.get("messages", [{}])[0] for r in requests]
    replay = replays[0]
    agent = requests[requests.index(replay) - 1]  # Pi's last request before its compaction
    assert replay.body["messages"][:-1] == agent.body["messages"]
    usage = replay.usage or {}
    share = usage["prompt_tokens_details"]["cached_tokens"] / usage["prompt_tokens"]
    assert share >= 0.9, usage
    path = session_of(rpc)
    entry = end["result"]
    assert entry["summary"].startswith("## Goal") and "## Next Steps" in entry["summary"]
    serialized = serialized_tokens(path, entry["firstKeptEntryId"])
    assert billed(replay) <= 0.5 * serialized * PRICE_INPUT, (billed(replay), serialized)
    written = [json.loads(line) for line in path.read_text().splitlines() if '"compaction"' in line]
    assert written and written[-1]["summary"] == entry["summary"]
    assert written[-1]["usage"]["cacheRead"] == usage["prompt_tokens_details"]["cached_tokens"] + sum(
        (r.usage or {})["prompt_tokens_details"]["cached_tokens"] for r in requests
        if is_serialized(r) and requests.index(r) > requests.index(replay))
    switched = rpc.command({"type": "switch_session", "sessionPath": str(path)})  # Pi reopens the file
    assert switched is None or not switched.get("cancelled")
    state = rpc.command({"type": "get_state"})
    assert state["sessionFile"] == str(path)
    messages = rpc.command({"type": "get_messages"})["messages"]
    assert any(m.get("role") == "compactionSummary" and m.get("summary") == entry["summary"] for m in messages)
    stats = rpc.command({"type": "get_session_stats"})  # Pi's own totals count the compaction's cache reads
    assert stats["tokens"]["cacheRead"] >= written[-1]["usage"]["cacheRead"] > 0, stats


def test_with_cache_reuse_off_pi_gets_todays_request(pi_with: Callable[[str], Started]) -> None:
    rpc, loopback = pi_with("off")
    end = threshold_compaction(rpc)
    assert end.get("result") and not end.get("errorMessage"), end
    summaries = [r for r in loopback.requests if is_serialized(r)]
    assert summaries and not any(is_replay(r) for r in loopback.requests)
    assert [m["role"] for m in summaries[0].body["messages"]] == ["system", "user"]
    assert "<conversation>" in summaries[0].body["messages"][1]["content"]

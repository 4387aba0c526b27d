"""What summaries cost, against the real daemon and the loopback provider's caches.

Checked: a compaction's and a branch summary's entry record the summed usage the provider
reported for their requests (cache reads included), priced at ``summarizer.prices`` or the
built-in registry price; ``pi/getStats`` totals count them; a GPT-5.6+ summary request
sends the explicit cache mode and so writes no cache entry.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.e2e.daemon_client import (
    Daemons,
    call,
    daemons_fixture,  # noqa: F401 - provides the `daemons` fixture
    generated,
    loopback_settings,
    read_lines,
)
from tests.loopback_provider import LoopbackProvider, RecordedRequest

pytestmark = pytest.mark.filterwarnings("ignore::pytest_lsp.LspSpecificationWarning")
PRICE = {"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75}


def reported(requests: list[RecordedRequest]) -> dict[str, int]:
    """The OpenAI usage the loopback reported for ``requests``, summed in our terms."""
    total = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    for request in requests:
        usage: dict[str, Any] = request.usage or {}
        details = usage["prompt_tokens_details"]
        read, write = details.get("cached_tokens", 0), details.get("cache_write_tokens", 0)
        total["input"] += usage["prompt_tokens"] - read - write
        total["cacheRead"] += read
        total["cacheWrite"] += write
        total["output"] += usage["completion_tokens"]
    return total


def cost_at(usage: dict[str, Any], price: dict[str, float]) -> float:
    return sum(usage[kind] * price[kind] for kind in ("input", "output", "cacheRead", "cacheWrite")) / 1e6


async def test_entries_record_the_reported_usage_priced_and_stats_count_them(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = generated(tmp_path / "s.jsonl", entries=150, seed=7)
    async with LoopbackProvider() as loopback:
        settings = {**loopback_settings(loopback.base_url, prices={"openai/loopback": PRICE}),
                    "compaction": {"keepRecentTokens": 2000}}
        client = await daemons.start(settings)
        # the same compaction of two copies of the file: the second reads the first's cache
        twin = tmp_path / "twin.jsonl"
        twin.write_bytes(path.read_bytes())
        other = (await call(client, "pi/openSession", {"path": str(twin)}))["sessionId"]
        first = await call(client, "pi/compact", {"sessionId": other})
        loopback.clear()
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        before = await call(client, "pi/getStats", {"sessionId": sid})
        result = await call(client, "pi/compact", {"sessionId": sid})
        sent = loopback.requests
        after = await call(client, "pi/getStats", {"sessionId": sid})
    entry = result["entry"]
    expected = reported(sent)
    assert expected["cacheRead"] > 0 and first["usage"]["cacheRead"] == 0
    usage = entry["usage"]
    assert {k: usage[k] for k in expected} == expected and usage == result["usage"] == read_lines(path)[-1]["usage"]
    assert usage["totalTokens"] == sum(expected.values())
    assert usage["cost"]["total"] == pytest.approx(cost_at(usage, PRICE))
    assert usage["cost"]["cacheRead"] == pytest.approx(usage["cacheRead"] * 0.3 / 1e6)
    grew = {k: after["tokens"][k] - before["tokens"][k] for k in ("input", "output", "cacheRead", "cacheWrite")}
    assert grew == expected and after["cost"] - before["cost"] == pytest.approx(usage["cost"]["total"])


async def test_a_branch_summary_is_priced_at_the_registry_price_and_gpt_5_6_sends_explicit_mode(
    daemons: Daemons, tmp_path: Path
) -> None:
    path = generated(tmp_path / "b.jsonl", entries=60, seed=3)
    lines = read_lines(path)
    target = next(e for e in reversed(lines[: len(lines) // 2]) if e.get("message", {}).get("role") == "assistant")
    async with LoopbackProvider() as loopback:
        client = await daemons.start(loopback_settings(loopback.base_url, model="gpt-5.6-sol"))
        sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
        before = await call(client, "pi/getStats", {"sessionId": sid})
        result = await call(client, "pi/navigateTree", {"sessionId": sid, "targetId": target["id"],
                                                         "summarize": True})
        sent = loopback.requests
        stats = await call(client, "pi/getStats", {"sessionId": sid})
    assert sent and all(r.body["prompt_cache_options"] == {"mode": "explicit"} for r in sent)
    usage = result["entry"]["usage"]
    assert {k: usage[k] for k in reported(sent)} == reported(sent) and usage["cacheWrite"] == 0
    sol = {"input": 4.0, "output": 20.0, "cacheRead": 0.4, "cacheWrite": 5.0}  # the registry's gpt-5.6-sol
    assert usage["cost"]["total"] == pytest.approx(cost_at(usage, sol)) and usage["cost"]["total"] > 0
    assert stats["cost"] - before["cost"] == pytest.approx(usage["cost"]["total"])

"""The masking tier at the threshold, through the real daemon (``compaction.masking.enabled``).

At a threshold compaction the daemon masks old tool results first; when that
brings the context to at most ``threshold - keepRecentTokens`` no summary is
written (``outcome: "maskedOnly"``), otherwise the summary follows the edits.
A manual ``pi/compact`` never masks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from tests.e2e.daemon_client import (
    Daemons,
    assistant_msg,
    call,
    daemons_fixture,
    generated,
    read_lines,
    user_msg,
    wait_event,
)

daemons = daemons_fixture
RESERVE, KEEP = 2000, 1000
MASKING = {"compaction": {"reserveTokens": RESERVE, "keepRecentTokens": KEEP,
                          "masking": {"enabled": True, "minTokens": 200, "olderThanTokens": 2000}}}


async def open_masking(daemons: Daemons, tmp_path: Path) -> tuple[Any, str, Path, dict[str, Any]]:
    path = generated(tmp_path / "s.jsonl", entries=300, seed=4)
    client = await daemons.start(MASKING)
    sid = (await call(client, "pi/openSession", {"path": str(path)}))["sessionId"]
    dry = await call(client, "pi/mask", {"sessionId": sid, "dryRun": True})
    assert dry["edits"] and dry["tokensAfter"] < dry["tokensBefore"] - 2000
    return client, sid, path, dry


async def cross_threshold(client: Any, sid: str, window: int) -> dict[str, Any]:
    """Set the window, append a turn whose usage crosses ``window - RESERVE``; the ended event."""
    await call(client, "pi/updateSettings", {"sessionId": sid, "settings": {"contextWindow": window}})
    turn = [user_msg("and now?"), assistant_msg("ok", input_tokens=window - RESERVE + 50)]
    appended = await call(client, "pi/append", {"sessionId": sid, "entries": turn})
    assert appended["shouldCompact"] is True
    ended: dict[str, Any] = await wait_event(client, "pi/compactionEnded")
    assert not ended.get("error"), ended
    return ended


async def test_masking_alone_is_enough_and_no_summary_is_written(daemons: Daemons, tmp_path: Path) -> None:
    client, sid, path, dry = await open_masking(daemons, tmp_path)
    window = dry["tokensAfter"] + RESERVE + KEEP + 1500
    ended = await cross_threshold(client, sid, window)
    result = ended["result"]
    assert result["outcome"] == "maskedOnly" and result["masked"]
    assert {e["targetId"] for e in result["masked"]} == {e["targetId"] for e in dry["edits"]}
    assert result["estimatedTokensAfter"] <= window - RESERVE - KEEP
    lines = read_lines(path)
    assert not any(e["type"] == "compaction" for e in lines)  # no model, no summary
    assert lines[-len(result["masked"]):] == result["masked"]


async def test_when_masking_is_not_enough_the_summary_follows_the_edits(daemons: Daemons, tmp_path: Path) -> None:
    client, sid, path, dry = await open_masking(daemons, tmp_path)
    window = dry["tokensAfter"] + RESERVE + KEEP - 500
    ended = await cross_threshold(client, sid, window)
    result = ended["result"]
    assert result["outcome"] == "compacted" and result["masked"]
    lines = read_lines(path)
    assert lines[-1] == result["entry"] and lines[-1]["type"] == "compaction"
    edits = [e for e in lines if e["type"] == "context_edit"]
    assert edits == result["masked"]


async def test_a_manual_compaction_never_masks(daemons: Daemons, tmp_path: Path) -> None:
    client, sid, path, _ = await open_masking(daemons, tmp_path)
    result = await call(client, "pi/compact", {"sessionId": sid})
    assert result["outcome"] == "compacted" and result["masked"] == []
    assert not any(e["type"] == "context_edit" for e in read_lines(path))


async def test_threshold_masking_is_asked_for_only_past_the_threshold(daemons: Daemons, tmp_path: Path) -> None:
    """``reason: "threshold"`` (the Pi extension's question at Pi's turn boundary): edits only past it."""
    client, sid, path, dry = await open_masking(daemons, tmp_path)
    lines = read_lines(path)
    asked = {"sessionId": sid, "dryRun": True, "reason": "threshold"}
    tokens = dry["tokensBefore"]
    for window, due in ((tokens + RESERVE, False), (tokens + RESERVE - 1, True)):  # strictly above window - reserve
        await call(client, "pi/updateSettings", {"sessionId": sid, "settings": {"contextWindow": window}})
        answer = await call(client, "pi/mask", asked)
        assert answer["tokensBefore"] == tokens
        assert answer["edits"] == (dry["edits"] if due else []), window
        assert answer["tokensAfter"] == (dry["tokensAfter"] if due else tokens)
    off = {"compaction": {"masking": {"enabled": False}}}
    await call(client, "pi/updateSettings", {"sessionId": sid, "settings": off})
    assert (await call(client, "pi/mask", asked))["edits"] == []  # masking off: never at the threshold
    with pytest.raises(JsonRpcException) as refused:
        await call(client, "pi/mask", {**asked, "entryIds": [dry["edits"][0]["targetId"]]})
    assert refused.value.code == -32602
    assert read_lines(path) == lines  # a dry run writes nothing

"""Smoke tests: the Pi 0.73.1 oracle runs and gives the known numbers on Pi's fixture.

The expected values were recorded from 0.73.1 itself (see docs/history/pi-0.73.1.md);
where they differ from v0.58.3's numbers, that is 0.73.1's repeated-
compaction range, not an oracle bug.
"""

from __future__ import annotations

import hashlib
import itertools
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import UNDEFINED, OracleError, PiOracle

pytestmark = pytest.mark.parity

DEFAULTS = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}


@pytest.fixture(scope="module")
def loaded(pi: PiOracle, pi_fixture_path: Path) -> dict[str, Any]:
    result: dict[str, Any] = pi.call("load", file=str(pi_fixture_path))
    return result


def test_ping_and_bad_requests_keep_the_oracle_alive(pi: PiOracle) -> None:
    assert pi.call("ping") == "pong"
    with pytest.raises(OracleError, match="unknown op"):
        pi.call("no-such-op")
    with pytest.raises(OracleError, match="missing 'file'"):
        pi.call("load")
    assert pi.call("ping") == "pong"


def test_load_migrates_v1_without_touching_the_input(pi: PiOracle, pi_fixture_path: Path) -> None:
    before = hashlib.sha256(pi_fixture_path.read_bytes()).hexdigest()
    result = pi.call("load", file=str(pi_fixture_path))
    assert hashlib.sha256(pi_fixture_path.read_bytes()).hexdigest() == before
    header = result["header"]
    assert header["version"] == 3
    assert list(header)[-1] == "version"  # appended after the v1 keys, not inserted
    assert header["id"] == "ffae836b-9420-4060-ac13-7745215f90ff"
    assert len(result["entries"]) == 1002
    assert result["fileTextAfterLoad"].count("\n") == 1003
    assert result["leafId"] == result["entries"][-1]["id"]
    assert result["labels"] == {} and result["sessionName"] is None


def test_migrated_entry_keys_and_linear_tree(loaded: dict[str, Any]) -> None:
    entries = loaded["entries"]
    assert list(entries[0]) == ["type", "timestamp", "message", "id", "parentId"]
    assert entries[0]["parentId"] is None
    assert all(e["parentId"] == p["id"] for p, e in itertools.pairwise(entries))
    compaction = entries[627]
    assert list(compaction) == [
        "type",
        "timestamp",
        "summary",
        "tokensBefore",
        "id",
        "parentId",
        "firstKeptEntryId",
    ]
    assert compaction["firstKeptEntryId"] == entries[550]["id"]
    tree = loaded["tree"]
    assert [node["depth"] for node in tree] == list(range(1002))


def test_ids_are_stable_across_ops(
    pi: PiOracle, pi_fixture_path: Path, loaded: dict[str, Any]
) -> None:
    ids = [e["id"] for e in loaded["entries"]]
    assert pi.call("branch", file=str(pi_fixture_path), fromId=UNDEFINED) == ids
    assert pi.call("branch", file=str(pi_fixture_path), fromId=ids[5]) == ids[:6]
    assert pi.call("branch", file=str(pi_fixture_path), fromId="nope") == []


def test_context_from_the_last_entry(pi: PiOracle, pi_fixture_path: Path) -> None:
    last, empty = pi.call("context", file=str(pi_fixture_path), leafIds=[UNDEFINED, None])
    assert last["thinkingLevel"] == "off"
    assert last["model"] == {"provider": "anthropic", "modelId": "claude-opus-4-5"}
    roles = Counter(m["role"] for m in last["messages"])
    assert len(last["messages"]) == 446
    assert last["messages"][0]["role"] == "compactionSummary"
    assert roles == {
        "compactionSummary": 1,
        "assistant": 219,
        "toolResult": 192,
        "user": 31,
        "bashExecution": 3,
    }
    assert empty == {"messages": [], "thinkingLevel": "off", "model": None}


def test_context_tokens(pi: PiOracle, pi_fixture_path: Path) -> None:
    tokens = pi.call("contextTokens", file=str(pi_fixture_path), leafId=UNDEFINED)
    assert tokens == {
        "tokens": 180820,
        "usageTokens": 168018,
        "trailingTokens": 12802,
        "lastUsageIndex": 444,
    }


def test_prepare_with_defaults_starts_at_previous_kept_entry(
    pi: PiOracle, pi_fixture_path: Path
) -> None:
    r = pi.call("prepare", file=str(pi_fixture_path), leafId=UNDEFINED, settings=DEFAULTS)
    prep = r["preparation"]
    assert r["firstKeptIndex"] == 946
    assert prep["isSplitTurn"] is True
    # 0.73.1 re-summarizes from the previous firstKeptEntryId (path index 550);
    # v0.58.3 started after the compaction entry (627) and gave 306 here.
    assert len(prep["messagesToSummarize"]) == 383
    assert len(prep["turnPrefixMessages"]) == 7
    assert prep["tokensBefore"] == 180820
    assert prep["previousSummary"].startswith("# Context Checkpoint")
    assert (len(r["readFiles"]), len(r["modifiedFiles"])) == (2, 12)
    assert r["serialized"].startswith("[User]: ")
    assert r["formattedFileOps"].startswith("\n\n<read-files>\n")


def test_prepare_before_the_first_compaction(
    pi: PiOracle, pi_fixture_path: Path, loaded: dict[str, Any]
) -> None:
    leaf = loaded["entries"][357]["id"]
    r = pi.call("prepare", file=str(pi_fixture_path), leafId=leaf, settings=DEFAULTS)
    prep = r["preparation"]
    assert r["firstKeptIndex"] == 259
    assert len(prep["messagesToSummarize"]) == 190
    assert len(prep["turnPrefixMessages"]) == 65
    assert prep["tokensBefore"] == 175004  # equals the file's own first compaction


def test_prepare_on_a_compaction_leaf_is_null(
    pi: PiOracle, pi_fixture_path: Path, loaded: dict[str, Any]
) -> None:
    leaf = loaded["entries"][627]["id"]
    r = pi.call("prepare", file=str(pi_fixture_path), leafId=leaf, settings=DEFAULTS)
    assert r["preparation"] is None


def test_cut_uses_the_repeated_compaction_range(pi: PiOracle, pi_fixture_path: Path) -> None:
    r = pi.call("cut", file=str(pi_fixture_path), keepRecentTokens=[20000, 10**9])
    assert (r["boundaryStart"], r["boundaryEnd"]) == (550, 1002)
    normal, everything = r["results"]
    assert (normal["firstKeptEntryIndex"], normal["turnStartIndex"]) == (946, 939)
    assert everything == {
        "keepRecentTokens": 10**9,
        "firstKeptEntryIndex": 550,
        "turnStartIndex": -1,
        "isSplitTurn": False,
        "firstKeptEntryId": r["pathIds"][550],
    }


def test_serialize_truncates_long_tool_results(pi: PiOracle) -> None:
    result = {
        "role": "toolResult",
        "toolCallId": "t",
        "toolName": "bash",
        "content": [{"type": "text", "text": "x" * 5000}],
        "isError": False,
    }
    text = pi.call("serialize", messages=[result])
    assert text == "[Tool result]: " + "x" * 2000 + "\n\n[... 3000 more characters truncated]"

"""Compaction core vs Pi 0.73.1: cut point, preparation, serialization, branch collection.

Sessions: generated ones of every shape (v3, so ids are stable and compared
directly; one v1 file compared by path position) and Pi's own fixture
``before-compaction.jsonl`` (v1: Pi draws random ids, so positions are compared).

The two deliberate fixes are the only allowed differences, and each is asserted
explicitly where it shows up:

* ``surrogate``: Pi cuts a tool result inside a surrogate pair; we keep one unit
  fewer. Wherever the serialized texts differ, re-serializing our messages with
  Pi's raw cut must give Pi's text exactly.
* ``null-args``: Pi throws on a tool call with ``null`` arguments while
  serializing; we print ``name()``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import UNDEFINED, OracleError, PiOracle

import pi_sessiond.compaction.serialize as serialize_module
from pi_sessiond.compaction.branch import collect_entries_for_branch_summary, prepare_branch_entries
from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.compaction.text import utf16_len
from pi_sessiond.compaction.tokens import CompactionSettings, estimate_context_tokens, estimate_tokens
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.pipeline.requests import compaction_requests
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session

pytestmark = pytest.mark.parity

KEEPS = [0, 1000, 5000, 20000, 50000]
SHAPES = ["linear", "long", "branchy", "kitchen-sink"]
PI_NULL_ARGS_ERROR = "Cannot convert undefined or null to object"
EMOJI = "\U0001f680"


def settings_json(keep: int) -> dict[str, Any]:
    return {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": keep}


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def as_json(value: Any) -> Any:
    """Our data as it comes back through JSON (JS prints 1.0 as 1; Python compares 1 == 1.0)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def _raw_prefix(text: str, units: int) -> str:
    raw = text.encode("utf-16-le", "surrogatepass")
    return raw[: units * 2].decode("utf-16-le", "surrogatepass")


def pi_style_serialize(messages: Any) -> str:
    """Our serializer with Pi's raw cut (may split a pair) instead of our fix."""
    original = serialize_module.utf16_prefix
    serialize_module.utf16_prefix = _raw_prefix
    try:
        return serialize_conversation(convert_to_llm(messages))
    finally:
        serialize_module.utf16_prefix = original


def has_null_arguments(messages: Any) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == "toolCall" and block.get("arguments") is None
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for block in m["content"]
    )


class Tally:
    """What matched and which deliberate differences were seen (printed with -s)."""

    def __init__(self) -> None:
        self.compared = 0
        self.surrogate = 0
        self.null_args = 0


@pytest.fixture(scope="module")
def tally() -> Iterator[Tally]:
    t = Tally()
    yield t
    print(f"\nparity: {t.compared} preparations, surrogate-fix diffs {t.surrogate}, null-args {t.null_args}")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("sessions")
    files: dict[str, Path] = {}
    for shape in SHAPES:
        for seed in (3, 4):
            path = out / f"{shape}-{seed}.jsonl"
            write(path, generate(seed=seed, entries=900, shape=shape, compaction_every=250))
            files[f"{shape}-{seed}"] = path
    v1 = out / "linear-v1.jsonl"
    write(v1, generate(seed=5, entries=500, shape="long", compaction_every=150, version=1))
    files["long-v1"] = v1
    return files


def leaves(session: Session, count: int = 4) -> list[str]:
    """A few entries spread over the file, plus every entry right before a compaction."""
    entries = session.entries
    step = max(1, len(entries) // (count + 1))
    picked = [entries[i].id for i in range(step, len(entries) - 1, step)][:count]
    before = [e.parent_id for e in entries if e.type == "compaction" and e.parent_id]
    return picked + [p for p in before if p not in picked]


def check_texts(ours: str, pi_text: str, our_messages: Any, tally: Tally) -> None:
    """Serialized texts must match, except for the surrogate fix, asserted explicitly."""
    if digest(ours) == digest(pi_text):
        return
    assert pi_style_serialize(our_messages) == pi_text
    assert utf16_len(ours) < utf16_len(pi_text) + 1  # only ever one unit fewer per cut
    tally.surrogate += 1


def compare_preparation(
    pi_result: dict[str, Any], prep: CompactionPreparation | None, by_id: bool, tally: Tally
) -> None:
    pi_prep = pi_result["preparation"]
    assert (prep is None) == (pi_prep is None)
    if prep is None or pi_prep is None:
        return
    tally.compared += 1
    assert prep.first_kept_entry_index == pi_result["firstKeptIndex"]
    if by_id:
        assert prep.first_kept_entry_id == pi_prep["firstKeptEntryId"]
    assert prep.is_split_turn == pi_prep["isSplitTurn"]
    assert prep.tokens_before == pi_prep["tokensBefore"]
    assert prep.previous_summary == pi_prep.get("previousSummary")
    for ours, theirs in (
        (prep.messages_to_summarize, pi_prep["messagesToSummarize"]),
        (prep.turn_prefix_messages, pi_prep["turnPrefixMessages"]),
    ):
        assert [m.get("role") for m in ours] == [m.get("role") for m in theirs]
        assert as_json(list(ours)) == theirs
    pi_ops = pi_prep["fileOps"]
    assert (set(pi_ops["read"]), set(pi_ops["written"]), set(pi_ops["edited"])) == (
        prep.file_ops.read,
        prep.file_ops.written,
        prep.file_ops.edited,
    )
    lists = prep.file_lists
    assert (list(lists.read_files), list(lists.modified_files)) == (
        pi_result["readFiles"],
        pi_result["modifiedFiles"],
    )
    requests = compaction_requests(prep)
    check_texts(requests.serialized, pi_result["serialized"], prep.messages_to_summarize, tally)
    check_texts(
        requests.turn_prefix_serialized,
        pi_result["turnPrefixSerialized"],
        prep.turn_prefix_messages,
        tally,
    )


def run_case(pi: PiOracle, file: Path, path: list[Entry], pi_leaf: str, keep: int, by_id: bool, tally: Tally) -> None:
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))
    try:
        pi_result = pi.call("prepare", file=str(file), leafId=pi_leaf, settings=settings_json(keep))
    except OracleError as exc:
        assert PI_NULL_ARGS_ERROR in str(exc)
        check_null_arguments_fix(pi, file, pi_leaf, keep, prep)
        tally.null_args += 1
        return
    compare_preparation(pi_result, prep, by_id, tally)


def check_null_arguments_fix(
    pi: PiOracle, file: Path, pi_leaf: str, keep: int, prep: CompactionPreparation | None
) -> None:
    """Pi crashed serializing a null-argument call; we serialize it and agree on the cut."""
    assert prep is not None
    messages = [*prep.messages_to_summarize, *prep.turn_prefix_messages]
    assert has_null_arguments(messages)
    requests = compaction_requests(prep)
    assert "ls()" in requests.serialized + requests.turn_prefix_serialized
    cut = pi.call("cut", file=str(file), leafId=pi_leaf, keepRecentTokens=[keep])
    [result] = cut["results"]
    assert (result["firstKeptEntryIndex"], result["isSplitTurn"]) == (
        prep.first_kept_entry_index,
        prep.is_split_turn,
    )
    assert cut["boundaryStart"] == prep.boundary_start
    tokens = pi.call("contextTokens", file=str(file), leafId=pi_leaf)
    assert tokens["tokens"] == prep.tokens_before


@pytest.mark.parametrize("name", [f"{s}-{seed}" for s in SHAPES for seed in (3, 4)])
def test_generated_v3_sessions(pi: PiOracle, generated: dict[str, Path], name: str, tally: Tally) -> None:
    file = generated[name]
    session = Session.open(file)
    cases: list[tuple[list[Entry], str]] = [(session.path_to(), UNDEFINED)]
    cases += [(session.path_to(leaf), leaf) for leaf in leaves(session)]
    for path, pi_leaf in cases:
        for keep in KEEPS:
            run_case(pi, file, path, pi_leaf, keep, True, tally)


def _pi_ids(pi: PiOracle, file: Path) -> list[str]:
    return [e["id"] for e in pi.call("load", file=str(file))["entries"]]


def test_generated_v1_session_by_position(pi: PiOracle, generated: dict[str, Path], tally: Tally) -> None:
    file = generated["long-v1"]
    session = Session.open(file)
    pi_ids = _pi_ids(pi, file)
    assert len(pi_ids) == len(session.entries)
    for index in (len(pi_ids) - 1, len(pi_ids) // 2, len(pi_ids) // 3):
        path = session.path_to(session.entries[index].id)
        for keep in KEEPS:
            run_case(pi, file, path, pi_ids[index], keep, False, tally)


@pytest.mark.parametrize("index", [None, 357, 358, 359, 600, 627, 628])
def test_pi_fixture_by_position(pi: PiOracle, pi_fixture_path: Path, index: int | None, tally: Tally) -> None:
    session = Session.open(pi_fixture_path)
    pi_ids = _pi_ids(pi, pi_fixture_path)
    leaf = UNDEFINED if index is None else pi_ids[index]
    path = session.path_to(None if index is None else session.entries[index].id)
    for keep in KEEPS:
        run_case(pi, pi_fixture_path, path, leaf, keep, False, tally)


def test_fixture_default_numbers(pi_fixture_path: Path) -> None:
    """docs/pi-0.73.1-notes.md §17, measured on 0.73.1."""
    path = Session.open(pi_fixture_path).path_to()
    prep = prepare_compaction(path)
    assert prep is not None
    assert (prep.boundary_start, prep.first_kept_entry_index, prep.turn_start_index) == (550, 946, 939)
    assert (len(prep.messages_to_summarize), len(prep.turn_prefix_messages)) == (383, 7)
    assert prep.tokens_before == 180_820


def test_cut_points_over_the_whole_range(pi: PiOracle, generated: dict[str, Path]) -> None:
    from pi_sessiond.compaction.cutpoint import find_cut_point

    for name in ("branchy-3", "kitchen-sink-3", "long-4"):
        file = generated[name]
        session = Session.open(file)
        keeps = [0, 1, 10, 100, 500, 1000, 3000, 5000, 20000, 50000, 10**9]
        result = pi.call("cut", file=str(file), leafId=UNDEFINED, keepRecentTokens=keeps)
        path = session.path_to()
        assert [e.id for e in path] == result["pathIds"]
        for keep, theirs in zip(keeps, result["results"], strict=True):
            cut = find_cut_point(path, result["boundaryStart"], result["boundaryEnd"], keep)
            assert (cut.first_kept_entry_index, cut.turn_start_index, cut.is_split_turn) == (
                theirs["firstKeptEntryIndex"],
                theirs["turnStartIndex"],
                theirs["isSplitTurn"],
            )


def test_estimates_of_every_context_message(pi: PiOracle, generated: dict[str, Path]) -> None:
    for name in ("kitchen-sink-3", "branchy-4"):
        session = Session.open(generated[name])
        for leaf in [None, *leaves(session)]:
            messages = list(session.context(leaf).messages) if leaf else list(session.context().messages)
            result = pi.call("estimate", messages=messages)
            assert [estimate_tokens(m) for m in messages] == result["perMessage"]
            ours = estimate_context_tokens(messages)
            assert {
                "tokens": ours.tokens,
                "usageTokens": ours.usage_tokens,
                "trailingTokens": ours.trailing_tokens,
                "lastUsageIndex": ours.last_usage_index,
            } == result["context"]


TRICKY_ARGS: list[Any] = [
    {"path": "a.ts", "offset": 1.0, "limit": 2.5, "big": 1e21, "small": 1e-7, "neg": -0.0},
    {"b": 1, "10": 2, "2": 3, "01": 4, "a": [1, {"z": None}]},
    # (A lone surrogate cannot be sent: the oracle client writes raw UTF-8.)
    {"text": 'q"\\\n\t\b\f\x00\x1f\x7f é\u2028' + EMOJI},
    {"huge": 12345678901234567890, "neg": -9007199254740993},
    ["x", 1],
    "ab" + EMOJI,
    {},
]


def test_tool_call_arguments_stringify_like_javascript(pi: PiOracle) -> None:
    for args in TRICKY_ARGS:
        message = {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "1", "name": "tool", "arguments": args}],
            "stopReason": "toolUse",
        }
        assert serialize_conversation(convert_to_llm([message])) == pi.call("serialize", messages=[message])
        estimate = pi.call("estimate", messages=[message])
        assert estimate["perMessage"] == [estimate_tokens(message)]


def test_fix_never_split_surrogate_pair(pi: PiOracle) -> None:
    text = "a" * 1999 + EMOJI + "b" * 10
    message = {
        "role": "toolResult",
        "toolCallId": "1",
        "toolName": "bash",
        "content": [{"type": "text", "text": text}],
        "isError": False,
    }
    theirs = pi.call("serialize", messages=[message])
    ours = serialize_conversation([message])
    assert theirs == "[Tool result]: " + "a" * 1999 + "\ud83d" + "\n\n[... 11 more characters truncated]"
    assert ours == "[Tool result]: " + "a" * 1999 + "\n\n[... 12 more characters truncated]"
    assert pi_style_serialize([message]) == theirs


def test_fix_null_tool_arguments(pi: PiOracle) -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "t"}, {"type": "toolCall", "id": "1", "name": "ls", "arguments": None}],
        "stopReason": "toolUse",
    }
    with pytest.raises(OracleError, match=PI_NULL_ARGS_ERROR):
        pi.call("serialize", messages=[message])
    assert serialize_conversation([message]) == "[Assistant]: t\n\n[Assistant tool calls]: ls()"
    # Estimation does not crash in Pi: JSON.stringify(null) is "null".
    assert pi.call("estimate", messages=[message])["perMessage"] == [estimate_tokens(message)]


def _branch_pairs(session: Session) -> list[tuple[str, str]]:
    childless = [e.id for e in session.entries if not session.tree.children.get(e.id)]
    spread = leaves(session, 3)
    pairs = [(a, b) for a in childless for b in childless if a != b][:6]
    pairs += [(childless[-1], t) for t in spread]
    pairs += [(spread[0], childless[0])] if spread and childless else []
    return pairs


@pytest.mark.parametrize("name", ["branchy-3", "branchy-4", "kitchen-sink-3", "kitchen-sink-4"])
def test_branch_collection(pi: PiOracle, generated: dict[str, Path], name: str) -> None:
    file = generated[name]
    session = Session.open(file)
    for old_leaf, target in _branch_pairs(session):
        for budget in (0, 2000, 111_616):
            theirs = pi.call("collectBranch", file=str(file), oldLeafId=old_leaf, targetId=target, tokenBudget=budget)
            found = collect_entries_for_branch_summary(session.tree.get, old_leaf, target)
            assert [e.id for e in found.entries] == theirs["entryIds"]
            assert found.common_ancestor_id == theirs["commonAncestorId"]
            prep = prepare_branch_entries(found.entries, budget)
            assert as_json(list(prep.messages)) == theirs["messages"]
            assert prep.total_tokens == theirs["totalTokens"]
            ops = theirs["fileOps"]
            assert (set(ops["read"]), set(ops["written"]), set(ops["edited"])) == (
                prep.file_ops.read,
                prep.file_ops.written,
                prep.file_ops.edited,
            )

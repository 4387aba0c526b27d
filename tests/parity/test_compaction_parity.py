"""Compaction core vs Pi 1.6.0: preparation, serialized text, token estimates, cut, branch, fork.

Sessions:

* generated ones of every v3 shape (ids are stable and compared directly), one
  v1 file and Pi's own fixture ``before-compaction.jsonl`` (v1: compared by
  path position);
* sessions written by Pi 1.6.0's own ``SessionManager`` (``write`` op): system
  messages with section/tool patches, ``context_edit`` replacements and
  omissions, recovery omissions, ``usage`` entries, checkpointed and
  retain-none compactions, branch summaries, labels, images, custom messages,
  codemode nested calls, trailing tool results larger than the budget.

The preparation (cut, lists, ``tokensBefore``, file ops, previous summary) and
the serialized texts are compared as identical JSON / strings, at several
``keepRecentTokens``. The one deliberate difference, asserted where it shows:

* ``null-args`` (``test_fix_null_tool_arguments``): Pi throws on a tool call
  with ``null`` arguments while serializing; we print ``name()``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import UNDEFINED, OracleError, PiOracle
from tests.parity.test_projection_parity import (
    USAGE,
    _m,
    _ref,
    assistant,
    script_branches_and_recovery,
    script_edits_and_checkpoints,
    system,
    tool_result,
    user,
)

from pi_sessiond.compaction.branch import collect_entries_for_branch_summary, prepare_branch_entries
from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.cutpoint import find_cut_point
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.serialize import serialize_conversation
from pi_sessiond.compaction.tokens import (
    CompactionSettings,
    ContextTokenEstimate,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
)
from pi_sessiond.examples.generator import generate, write
from pi_sessiond.pipeline.requests import compaction_requests
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.kinds import entry_messages
from pi_sessiond.store.livecontext import LiveContext
from pi_sessiond.store.session import Session
from pi_sessiond.store.tree import SessionTree

pytestmark = pytest.mark.parity
Json = dict[str, Any]

KEEPS = [0, 1000, 5000, 20000]
SHAPES = ["linear", "long", "branchy", "kitchen-sink", "pi16"]
PI_NULL_ARGS_ERROR = "Cannot convert undefined or null to object"
EMOJI = "\U0001f680"
IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def settings_json(keep: int) -> Json:
    return {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": keep}


def as_json(value: Any) -> Any:
    """Our data as it comes back through JSON (JS prints 1.0 as 1; Python compares 1 == 1.0)."""
    return json.loads(json.dumps(value, ensure_ascii=False))


def estimate_json(ours: ContextTokenEstimate) -> Json:
    return {"tokens": ours.tokens, "usageTokens": ours.usage_tokens, "trailingTokens": ours.trailing_tokens,
            "lastUsageIndex": ours.last_usage_index}


class Tally:
    """How many preparations matched, how many Pi refused, null-args fixes seen (printed with -s)."""

    def __init__(self) -> None:
        self.compared = 0
        self.none = 0
        self.null_args = 0


@pytest.fixture(scope="module")
def tally() -> Iterator[Tally]:
    t = Tally()
    yield t
    print(f"\nparity 1.6.0: {t.compared} preparations, {t.none} refused by both, null-args {t.null_args}")


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


def check_text(ours: str, theirs: Any, messages: Any, tally: Tally) -> None:
    """Serialized texts are identical, except where Pi throws on null tool arguments (our fix)."""
    if isinstance(theirs, dict):
        assert PI_NULL_ARGS_ERROR in theirs["$error"]
        assert has_null_arguments(messages) and "()" in ours
        tally.null_args += 1
        return
    assert ours == theirs


def has_null_arguments(messages: Any) -> bool:
    return any(
        isinstance(block, dict) and block.get("type") == "toolCall" and block.get("arguments") is None
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("content"), list)
        for block in m["content"]
    )


def compare_preparation(pi_result: Json, prep: CompactionPreparation | None, path: list[Entry], by_id: bool,
                        tally: Tally) -> None:
    pi_prep = pi_result["preparation"]
    assert (prep is None) == (pi_prep is None)
    if prep is None or pi_prep is None:
        tally.none += 1
        return
    tally.compared += 1
    assert [e.id for e in path].index(prep.first_kept_entry_id) == pi_result["firstKeptIndex"]
    if by_id:
        assert prep.first_kept_entry_id == pi_prep["firstKeptEntryId"]
    assert prep.is_split_turn == pi_prep["isSplitTurn"]
    assert prep.tokens_before == pi_prep["tokensBefore"]
    assert prep.previous_summary == pi_prep.get("previousSummary")
    assert as_json(list(prep.messages_to_summarize)) == pi_prep["messagesToSummarize"]
    assert as_json(list(prep.turn_prefix_messages)) == pi_prep["turnPrefixMessages"]
    ops = pi_prep["fileOps"]
    assert (set(ops["read"]), set(ops["written"]), set(ops["edited"])) == (
        prep.file_ops.read, prep.file_ops.written, prep.file_ops.edited)
    lists = prep.file_lists
    assert (list(lists.read_files), list(lists.modified_files)) == (pi_result["readFiles"], pi_result["modifiedFiles"])
    requests = compaction_requests(prep)
    check_text(requests.serialized, pi_result["serialized"], prep.messages_to_summarize, tally)
    check_text(requests.turn_prefix_serialized, pi_result["turnPrefixSerialized"], prep.turn_prefix_messages, tally)


def run_case(pi16: PiOracle, file: Path, session: Session, leaf: str | None, pi_leaf: str, keep: int | None,
             by_id: bool, tally: Tally) -> None:
    """One preparation on both sides; ``keep=None``: each side's default settings."""
    path = session.path_to(leaf)
    projection = session.projection() if leaf is None else session.projection(leaf)
    settings = CompactionSettings() if keep is None else CompactionSettings(keep_recent_tokens=keep)
    prep = prepare_compaction(path, settings, projection)
    assert prep == prepare_compaction(path, settings)  # incremental == fresh
    pi_settings = {} if keep is None else {"settings": settings_json(keep)}
    pi_result = pi16.call("prepare", file=str(file), leafId=pi_leaf, **pi_settings)
    compare_preparation(pi_result, prep, path, by_id, tally)


def check_projected_tokens(pi16: PiOracle, file: Path, session: Session, leaf: str | None, pi_leaf: str) -> None:
    projection = session.projection() if leaf is None else session.projection(leaf)
    ours = estimate_projected_context_tokens(projection, session.path_to(leaf))
    assert estimate_json(ours) == pi16.call("projectedTokens", file=str(file), leafId=pi_leaf)


@pytest.mark.parametrize("name", [f"{s}-{seed}" for s in SHAPES for seed in (3, 4)])
def test_generated_v3_sessions(pi16: PiOracle, generated: dict[str, Path], name: str, tally: Tally) -> None:
    file = generated[name]
    session = Session.open(file)
    cases: list[tuple[str | None, str]] = [(None, UNDEFINED), *((leaf, leaf) for leaf in leaves(session))]
    for leaf, pi_leaf in cases:
        check_projected_tokens(pi16, file, session, leaf, pi_leaf)
        for keep in KEEPS:
            run_case(pi16, file, session, leaf, pi_leaf, keep, True, tally)


def _pi_ids(pi16: PiOracle, file: Path) -> list[str]:
    return [e["id"] for e in pi16.call("load", file=str(file))["entries"]]


def test_generated_v1_session_by_position(pi16: PiOracle, generated: dict[str, Path], tally: Tally) -> None:
    file = generated["long-v1"]
    session = Session.open(file)
    pi_ids = _pi_ids(pi16, file)
    assert len(pi_ids) == len(session.entries)
    for index in (len(pi_ids) - 1, len(pi_ids) // 2, len(pi_ids) // 3):
        for keep in KEEPS:
            run_case(pi16, file, session, session.entries[index].id, pi_ids[index], keep, False, tally)


@pytest.mark.parametrize("index", [None, 357, 358, 359, 600, 627, 628])
def test_pi_fixture_by_position(pi16: PiOracle, pi_fixture_path: Path, index: int | None, tally: Tally) -> None:
    session = Session.open(pi_fixture_path)
    pi_ids = _pi_ids(pi16, pi_fixture_path)
    leaf = None if index is None else session.entries[index].id
    pi_leaf = UNDEFINED if index is None else pi_ids[index]
    check_projected_tokens(pi16, pi_fixture_path, session, leaf, pi_leaf)
    for keep in KEEPS:
        run_case(pi16, pi_fixture_path, session, leaf, pi_leaf, keep, False, tally)


# ----------------------------------------------------- sessions Pi 1.6.0 wrote
def script_images_custom_and_codemode() -> list[Json]:
    """Images in user messages, custom messages that count, codemode nested calls, a huge trailing tool result."""
    nested = {"calls": [{"id": "n1", "name": "read", "arguments": {"path": "nested.ts"}, "status": "ok"},
                        {"id": "n2", "name": "edit", "argumentsBytes": 90000, "status": "ok"},
                        {"id": "n3", "name": "write", "arguments": {"path": "out.ts"}, "status": "ok"}]}
    script_result = {**tool_result("cm", "script ran", 6), "toolName": "codemode", "nestedCalls": nested}
    return [
        _m("msg", system(1, "Prompt.", sections={"a": "x" * 400, "b": None}, toolsAdded=[{"name": "read"}])),
        _m("msg", user([{"type": "text", "text": "look"}, IMAGE], 2)),                    # 1
        _m("msg", assistant("I see it " + "y" * 3000, 3)),                                # 2
        _m("appendCustomMessageEntry", "note", "z" * 6000, True),                          # 3
        _m("msg", user("run the script " + EMOJI, 4)),                                     # 4
        _m("msg", assistant("running", 5, call="cm")),                                     # 5
        _m("msg", script_result),                                                          # 6
        _m("msg", assistant("done", 7)),                                                   # 7
        _m("msg", user("now read big", 8)),                                                # 8
        _m("msg", assistant("reading big", 9, call="c2")),                                 # 9
        _m("msg", tool_result("c2", "b" * 1999 + EMOJI + "tail" * 2000, 10)),              # 10
    ]


def script_usage_and_compactions() -> list[Json]:
    """All-zero usage, usage before and after edits, a hook compaction, a split turn after a compaction."""
    zero = {**USAGE, "input": 0, "output": 0, "totalTokens": 0}
    big = {**USAGE, "totalTokens": 12000}
    return [
        _m("msg", user("u1 " + "a" * 3000, 1)),
        _m("msg", {**assistant("a1 " + "b" * 3000, 2), "usage": big}),                   # 1
        _m("msg", user("u2", 3)),                                                          # 2
        _m("msg", {**assistant("a2", 4), "usage": zero}),                                  # 3
        _m("appendContextEdit", _ref(0), {"content": "u1 (shorter)"}),                      # 4
        _m("msg", user("u3 " + "c" * 5000, 5)),                                            # 5
        _m("msg", assistant("a3", 6, call="c3")),                                          # 6
        _m("msg", tool_result("c3", "d" * 9000, 7)),                                       # 7
        _m("appendCompaction", "hook summary", _ref(5), 9000, {"readFiles": ["hook.ts"]}, True),  # 8
        _m("msg", user("u4 " + "e" * 4000, 8)),                                            # 9
        _m("msg", assistant("a4", 9, call="c4")),                                          # 10
        _m("msg", tool_result("c4", "f" * 7000, 10)),                                      # 11
        _m("msg", assistant("a5", 11)),                                                    # 12
        _m("appendThinkingLevelChange", "low"),                                            # 13
        _m("msg", user("u5 " + "g" * 4000, 12)),                                           # 14
        _m("msg", assistant("a6 " + "h" * 2000, 13)),                                      # 15
    ]


def script_recovery() -> list[Json]:
    """``[…, u (over-budget input), a (failed attempt, omitted), toolResult (omitted), edit, edit]``."""
    return [
        _m("msg", user("start", 1)),
        _m("msg", assistant("fine", 2)),
        _m("msg", user("huge " + "x" * 8000, 3)),                                          # 2
        _m("msg", assistant("", 4, call="c1", stop="length")),                             # 3
        _m("msg", tool_result("c1", "partial", 5)),                                        # 4
        _m("appendContextEdit", _ref(3), None),                                            # 5
        _m("appendContextEdit", _ref(4), None),                                            # 6
    ]


SCRIPTS = {
    "edits_and_checkpoints": script_edits_and_checkpoints,
    "branches_and_recovery": script_branches_and_recovery,
    "images_custom_codemode": script_images_custom_and_codemode,
    "usage_and_compactions": script_usage_and_compactions,
    "recovery": script_recovery,
}


@pytest.fixture(params=sorted(SCRIPTS))
def pi_written(request: pytest.FixtureRequest, pi16: PiOracle, tmp_path: Path) -> Path:
    written = pi16.call("write", calls=SCRIPTS[request.param]())
    path = tmp_path / f"{request.param}.jsonl"
    path.write_text(written["fileText"], encoding="utf-8")
    return path


def test_pi_written_sessions_at_every_entry(pi16: PiOracle, pi_written: Path, tally: Tally) -> None:
    session = Session.open(pi_written)
    for entry in session.entries:
        check_projected_tokens(pi16, pi_written, session, entry.id, entry.id)
        for keep in [*KEEPS, 1, 3000]:
            run_case(pi16, pi_written, session, entry.id, entry.id, keep, True, tally)


def test_the_recovery_suffix_moves_the_cut(pi16: PiOracle, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(pi16.call("write", calls=script_recovery())["fileText"], encoding="utf-8")
    prep = prepare_compaction(Session.open(path).path_to(), CompactionSettings(keep_recent_tokens=1000))
    assert prep is not None and prep.first_kept_entry_id == "00000004" and prep.is_split_turn
    assert [m["role"] for m in prep.turn_prefix_messages] == ["user"]


def test_trailing_tool_results_keep_their_call(pi16: PiOracle, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(pi16.call("write", calls=script_images_custom_and_codemode())["fileText"], encoding="utf-8")
    prep = prepare_compaction(Session.open(path).path_to(), CompactionSettings(keep_recent_tokens=1000))
    assert prep is not None and prep.first_kept_entry_id == "0000000a"  # the assistant that made the call
    assert prep.is_split_turn and [m["role"] for m in prep.turn_prefix_messages] == ["user"]
    assert {"nested.ts"} <= prep.file_ops.read and "out.ts" in prep.file_ops.written


def test_nothing_to_summarize_gives_no_preparation(pi16: PiOracle, tmp_path: Path) -> None:
    calls = [_m("msg", system(1, "Prompt.")), _m("msg", user("hi", 2)), _m("msg", assistant("hello", 3))]
    path = tmp_path / "n.jsonl"
    path.write_text(pi16.call("write", calls=calls)["fileText"], encoding="utf-8")
    assert pi16.call("prepare", file=str(path), settings=settings_json(20000))["preparation"] is None
    assert prepare_compaction(Session.open(path).path_to(), CompactionSettings(keep_recent_tokens=20000)) is None


# ------------------------------------------------------------- single pieces
def test_estimates_of_every_context_message(pi16: PiOracle, generated: dict[str, Path]) -> None:
    for name in ("kitchen-sink-3", "branchy-4"):
        session = Session.open(generated[name])
        for leaf in [None, *leaves(session)]:
            messages = list(session.projection(leaf).messages) if leaf else list(session.projection().messages)
            result = pi16.call("estimate", messages=messages)
            assert [estimate_tokens(m) for m in messages] == result["perMessage"]
            assert estimate_json(estimate_context_tokens(messages)) == result["context"]


def test_estimates_of_pi_written_messages(pi16: PiOracle, pi_written: Path) -> None:
    messages = [m for e in Session.open(pi_written).entries for m in entry_messages(e)]  # null content normalized
    messages.append({"role": "user", "content": [{"type": "text", "text": "seven chars?"}, IMAGE], "timestamp": 1})
    result = pi16.call("estimate", messages=messages)
    assert [estimate_tokens(m) for m in messages] == result["perMessage"]
    assert estimate_json(estimate_context_tokens(messages)) == result["context"]


def test_raw_cut_points_over_the_whole_path(pi16: PiOracle, generated: dict[str, Path]) -> None:
    keeps = [0, 1, 10, 100, 500, 1000, 3000, 5000, 20000, 50000, 10**9]
    for name in ("branchy-3", "kitchen-sink-3", "long-4"):
        file = generated[name]
        path = Session.open(file).path_to()
        result = pi16.call("cut", file=str(file), leafId=UNDEFINED, keepRecentTokens=keeps)
        assert [e.id for e in path] == result["pathIds"]
        for keep, theirs in zip(keeps, result["results"], strict=True):
            cut = find_cut_point(path, 0, len(path), keep)
            assert (cut.first_kept_entry_index, cut.turn_start_index, cut.is_split_turn) == (
                theirs["firstKeptEntryIndex"], theirs["turnStartIndex"], theirs["isSplitTurn"])


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


def test_tool_call_arguments_stringify_like_javascript(pi16: PiOracle) -> None:
    for args in TRICKY_ARGS:
        message = {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "1", "name": "tool", "arguments": args}],
            "stopReason": "toolUse",
        }
        assert serialize_conversation(convert_to_llm([message])) == pi16.call("serialize", messages=[message])
        assert pi16.call("estimate", messages=[message])["perMessage"] == [estimate_tokens(message)]


def test_thinking_is_omitted_and_pairs_are_never_split(pi16: PiOracle) -> None:
    messages: list[Json] = [
        assistant("visible", 1),
        tool_result("c", "a" * 1999 + EMOJI + "b" * 10, 2),
        system(3, "system text"),
        user([{"type": "text", "text": "x"}, IMAGE, {"type": "text", "text": "y"}], 4),
    ]
    theirs = pi16.call("serialize", messages=messages)
    assert serialize_conversation(convert_to_llm(messages)) == theirs
    assert "hmm" not in theirs and "[... 11 more characters truncated]" in theirs


def test_fix_null_tool_arguments(pi16: PiOracle) -> None:
    message = {
        "role": "assistant",
        "content": [{"type": "text", "text": "t"}, {"type": "toolCall", "id": "1", "name": "ls", "arguments": None}],
        "stopReason": "toolUse",
    }
    with pytest.raises(OracleError, match=PI_NULL_ARGS_ERROR):
        pi16.call("serialize", messages=[message])
    assert serialize_conversation([message]) == "[Assistant]: t\n\n[Assistant tool calls]: ls()"
    assert pi16.call("estimate", messages=[message])["perMessage"] == [estimate_tokens(message)]


# ------------------------------------------------------------- branch and fork
def _branch_pairs(session: Session) -> list[tuple[str, str]]:
    childless = [e.id for e in session.entries if not session.tree.children.get(e.id)]
    spread = leaves(session, 3)
    pairs = [(a, b) for a in childless for b in childless if a != b][:6]
    pairs += [(childless[-1], t) for t in spread]
    pairs += [(spread[0], childless[0])] if spread and childless else []
    return pairs


def check_branch(pi16: PiOracle, file: Path, session: Session, old_leaf: str, target: str, budget: int) -> None:
    found = collect_entries_for_branch_summary(session.tree.get, old_leaf, target)
    try:
        theirs = pi16.call("collectBranch", file=str(file), oldLeafId=old_leaf, targetId=target, tokenBudget=budget)
    except OracleError as exc:  # Pi estimates the raw stored message: null content throws (we count it 0)
        assert "content is not iterable" in str(exc)
        assert any(e.message is not None and e.message.get("content") is None for e in found.entries)
        prepare_branch_entries(found.entries, budget)
        return
    assert [e.id for e in found.entries] == theirs["entryIds"]
    assert found.common_ancestor_id == theirs["commonAncestorId"]
    prep = prepare_branch_entries(found.entries, budget)
    assert as_json(list(prep.messages)) == theirs["messages"]
    assert prep.total_tokens == theirs["totalTokens"]
    ops = theirs["fileOps"]
    assert (set(ops["read"]), set(ops["written"]), set(ops["edited"])) == (
        prep.file_ops.read, prep.file_ops.written, prep.file_ops.edited)


@pytest.mark.parametrize("name", ["branchy-3", "branchy-4", "kitchen-sink-3", "kitchen-sink-4"])
def test_branch_preparation_of_generated_sessions(pi16: PiOracle, generated: dict[str, Path], name: str) -> None:
    file = generated[name]
    session = Session.open(file)
    for old_leaf, target in _branch_pairs(session):
        for budget in (0, 2000, 111_616):
            check_branch(pi16, file, session, old_leaf, target, budget)


def test_branch_preparation_of_pi_written_sessions(pi16: PiOracle, pi_written: Path) -> None:
    session = Session.open(pi_written)
    ids = [e.id for e in session.entries]
    targets = [ids[0], ids[len(ids) // 2], ids[-1], "root-less"]
    for old_leaf in [*ids[1::3], ids[-1]]:
        for target in targets:
            for budget in (0, 50, 1500):
                check_branch(pi16, pi_written, session, old_leaf, target, budget)


def _normalized_fork(entries: list[Json]) -> list[Json]:
    """Fresh label ids (drawn differently by Pi and us) replaced by their position."""
    fresh = {e["id"]: f"label{i}" for i, e in enumerate(entries) if e["type"] == "label" and e["id"] not in
             {t["targetId"] for t in entries if t["type"] == "label"}}
    text = json.dumps(entries, ensure_ascii=False)
    for old, new in fresh.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    return list(json.loads(text))


def script_labels_and_compactions() -> list[Json]:
    """``[u1, a1, label(u1), T, u2, a2, C(firstKept = the label)]`` and a label right before a compaction."""
    return [
        _m("msg", user("u1", 1)),
        _m("msg", assistant("a1", 2)),
        _m("appendLabelChange", _ref(0), "start"),          # 2
        _m("appendThinkingLevelChange", "high"),            # 3
        _m("msg", user("u2", 3)),                           # 4
        _m("msg", assistant("a2", 4)),                      # 5
        _m("appendCompaction", "s1", _ref(2), 100),         # 6
        _m("msg", user("u3", 5)),                           # 7
        _m("appendLabelChange", _ref(7), "later"),          # 8
        _m("appendCompaction", "s2", _ref(8), 200),         # 9
        _m("msg", user("u4", 6)),                           # 10
        _m("appendCompaction", "s3", None, 300),            # 11
        _m("appendLabelChange", _ref(10), "end"),           # 12
    ]


def test_fork_as_pi_1_6_0(pi16: PiOracle, tmp_path: Path) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text(pi16.call("write", calls=script_labels_and_compactions())["fileText"], encoding="utf-8")
    source = Session.open(path)
    for leaf in [e.id for e in source.entries]:
        theirs = pi16.call("fork", file=str(path), leafId=leaf)["entries"]
        out = tmp_path / leaf
        out.mkdir()
        forked = fork_session(Session.open(path), leaf, out)
        assert forked.path is not None  # every path here has a user message: written at once
        ours = [json.loads(line) for line in forked.path.read_text(encoding="utf-8").splitlines()[1:]]
        assert _normalized_fork(ours) == _normalized_fork(theirs), leaf
        reopened = Session.open(forked.path)
        assert all(e.parent_id is None or reopened.tree.get(e.parent_id) for e in reopened.entries), leaf
        assert as_json(list(reopened.context().messages)) == as_json(list(source.context(leaf).messages)), leaf


def _replayed_preparations(file: Path, every: int, keeps: list[int]) -> Iterator[tuple[str, int, list[Entry],
                                                                                      CompactionPreparation | None]]:
    """Append the file's entries one by one to a live projection; every ``every`` entries, prepare on it."""
    tree = SessionTree()
    live = LiveContext(tree)
    entries = Session.open(file).entries
    for n, entry in enumerate(entries):
        fresh = Entry.from_data(dict(entry.data))
        tree.add(fresh)
        live.on_append(fresh)
        if n % every == 0 or n == len(entries) - 1:
            for keep in keeps:
                path = tree.path()
                yield fresh.id, keep, path, prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep),
                                                               live.projection())


def test_live_preparation_after_every_append_is_pi_16s(pi16: PiOracle, pi_written: Path, tally: Tally) -> None:
    """The incremental preparation (the live projection's index, folded in per append) against Pi 1.6.0."""
    for leaf, keep, path, prep in _replayed_preparations(pi_written, 1, [1, 3000, 20000]):
        pi_result = pi16.call("prepare", file=str(pi_written), leafId=leaf, settings=settings_json(keep))
        compare_preparation(pi_result, prep, path, True, tally)


def test_live_preparation_of_a_generated_session_is_pi_16s(pi16: PiOracle, generated: dict[str, Path],
                                                           tally: Tally) -> None:
    file = generated["pi16-3"]
    for leaf, keep, path, prep in _replayed_preparations(file, 60, [1000, 20000]):
        pi_result = pi16.call("prepare", file=str(file), leafId=leaf, settings=settings_json(keep))
        compare_preparation(pi_result, prep, path, True, tally)

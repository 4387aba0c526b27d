"""Properties of the cut and the preparation over generated session trees.

* the cut never lands on a tool result (when the range has any cut point);
* the kept messages are a suffix of the projection: committing the compaction
  gives a context of exactly the summary plus the (non-system) messages from
  the first kept entry;
* every message of the range is summarized, in the turn prefix, or kept —
  exactly once, in order (so what a previous compaction kept is never lost);
* a preparation always has something to summarize (1.6.0 returns none otherwise);
* preparation is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.unit.compaction.builders import PathBuilder, chars, usage

from pi_sessiond.compaction.cutpoint import find_valid_cut_points
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction, summarized_messages
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.examples.generator import generate
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.migrate import migrate
from pi_sessiond.store.projection import project_path
from pi_sessiond.store.reader import ReadResult
from pi_sessiond.store.tree import SessionTree

KEEPS = [0, 1, 100, 1000, 5000, 20000, 50000]
sizes = st.integers(0, 6000)


def _turn(b: PathBuilder, draw: Any) -> None:
    b.user(chars(draw(sizes)))
    for _ in range(draw(st.integers(0, 3))):
        path = draw(st.sampled_from(["a.ts", "b.ts", "c.ts"]))
        name = draw(st.sampled_from(["read", "edit", "write", "bash"]))
        b.assistant(chars(draw(sizes)), calls=[(name, {"path": path})], stop="toolUse")
        b.tool(chars(draw(sizes)), name)
    stop = draw(st.sampled_from(["stop", "stop", "aborted", "error"]))
    b.assistant(chars(draw(sizes)), stop=stop, use=usage(draw(st.integers(0, 90_000))))


def _extra(b: PathBuilder, kind: str, draw: Any) -> None:
    if kind == "bash":
        b.bash("ls", chars(draw(sizes)), excludeFromContext=draw(st.booleans()))
    elif kind == "custom_message":
        b.custom_message(chars(draw(sizes)))
    elif kind == "branch_summary":
        b.branch_summary(chars(draw(st.integers(0, 400))))
    elif kind == "meta":
        draw(st.sampled_from([b.thinking, b.model]))()
    elif kind == "compaction":
        _compact(b, draw(st.sampled_from(KEEPS)))
    elif kind == "branch" and b.entries:
        parent = draw(st.sampled_from(b.entries)).id
        b.user(chars(draw(sizes)), parent=parent)


def _current_path(b: PathBuilder) -> list[Entry]:
    if not b.entries:
        return []
    tree = SessionTree(list(b.entries))
    return tree.path(b.entries[-1].id)


def _compact(b: PathBuilder, keep: int) -> None:
    prep = prepare_compaction(_current_path(b), CompactionSettings(keep_recent_tokens=keep))
    if prep is not None and not prep.nothing_to_compact:
        b.compaction(prep.first_kept_entry_id, summary=f"summary {len(b.entries)}")


@st.composite
def session_paths(draw: Any) -> list[Entry]:
    b = PathBuilder()
    kinds = ["turn"] * 4 + ["bash", "custom_message", "branch_summary", "meta", "compaction", "branch"]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(kinds))
        if kind == "turn":
            _turn(b, draw)
        else:
            _extra(b, kind, draw)
    return _current_path(b)


def _same(a: Sequence[Any], b: Sequence[Any]) -> bool:
    return len(a) == len(b) and all(x is y or x == y for x, y in zip(a, b, strict=True))


def check_preparation(path: list[Entry], prep: CompactionPreparation) -> None:
    entries = prep.projection.entries
    start, kept = prep.boundary_start, prep.first_kept_entry_index
    if find_valid_cut_points(entries, start, len(entries)):
        assert entries[kept].entry.role != "toolResult"
    assert start <= kept < len(entries)
    covered = [*prep.messages_to_summarize, *prep.turn_prefix_messages, *summarized_messages(entries[kept:])]
    assert _same(covered, summarized_messages(entries[start:]))
    if prep.turn_prefix_messages:
        assert prep.is_split_turn
    assert not prep.nothing_to_compact
    check_kept_suffix(path, prep)


def check_kept_suffix(path: list[Entry], prep: CompactionPreparation) -> None:
    """Committing the compaction keeps exactly the projected messages from the first kept entry."""
    b = PathBuilder.extending(path)
    b.add("compaction", parent=path[-1].id, summary="S", firstKeptEntryId=prep.first_kept_entry_id)
    after = project_path(b.entries).messages
    assert after[0]["role"] == "compactionSummary"
    expected = list(summarized_messages(prep.projection.entries[prep.first_kept_entry_index :]))
    assert _same(after[1:], expected)
    before = [m for m in project_path(path).messages if m.get("role") != "system"]
    assert not expected or _same(before[-len(expected) :], expected)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_paths(), st.sampled_from(KEEPS))
def test_preparation_properties(path: list[Entry], keep: int) -> None:
    prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))
    if prep is None:  # also when nothing is to summarize (1.6.0)
        assert prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep)) is None
        return
    check_preparation(path, prep)
    assert prep == prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))
    copy = [Entry.from_data(dict(e.data)) for e in path]
    assert prep == prepare_compaction(copy, CompactionSettings(keep_recent_tokens=keep))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(session_paths(), st.sampled_from(KEEPS), st.sampled_from(KEEPS))
def test_chained_compactions_lose_nothing(path: list[Entry], first: int, second: int) -> None:
    b = PathBuilder.extending(path)
    prep = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=first))
    if prep is None or prep.nothing_to_compact:
        return
    previously_kept = summarized_messages(prep.projection.entries[prep.first_kept_entry_index :])
    b.compaction(prep.first_kept_entry_id)
    b.user("next")
    b.assistant("reply")
    again = prepare_compaction(b.entries, CompactionSettings(keep_recent_tokens=second))
    if again is None:  # nothing to summarize: everything stays in the context
        kept_now = summarized_messages(project_path(b.entries).entries)
        assert all(any(m is c or m == c for c in kept_now) for m in previously_kept)
        return
    assert again.boundary_start == 1  # right after the projected compaction
    entries = again.projection.entries
    covered = [*again.messages_to_summarize, *again.turn_prefix_messages]
    covered += summarized_messages(entries[again.first_kept_entry_index :])
    assert all(any(m is c or m == c for c in covered) for m in previously_kept)


def _load(lines: list[dict[str, Any]]) -> list[Entry]:
    result = ReadResult(lines[0], [Entry.from_data(d) for d in lines[1:]], [], 0, True)
    migrate(result)
    return SessionTree(result.entries).path()


@pytest.mark.parametrize("shape", ["linear", "long", "branchy", "kitchen-sink"])
@pytest.mark.parametrize("seed", [1, 2])
def test_generated_sessions_satisfy_the_properties(shape: str, seed: int) -> None:
    lines = generate(seed=seed, entries=600, shape=shape, compaction_every=150)
    path = _load(lines)
    for keep in KEEPS:
        prep = prepare_compaction(path, CompactionSettings(keep_recent_tokens=keep))
        if prep is None:
            continue
        check_preparation(path, prep)
        assert prep == prepare_compaction(_load(lines), CompactionSettings(keep_recent_tokens=keep))

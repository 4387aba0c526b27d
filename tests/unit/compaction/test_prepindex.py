"""The preparation index of the live projection (``compaction/prepindex.py``).

A preparation on a snapshot of the live projection (which carries the index kept
from earlier calls) must equal the one built from scratch on the same path, after
every append: ordinary entries, context edits of old and new entries (omitting,
replacing, changing an entry's message count, inside and outside the summarized
range), system messages, compactions (a rebuild), leaf moves, and snapshots older
than what the index has folded in. Pi 1.6.0 itself is the guard of the fresh
preparation (tests/parity/test_compaction_parity.py).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.prepindex import MEMO_KEY, PreparationIndex
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.examples.generator import generate
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.livecontext import LiveContext
from pi_sessiond.store.projection import Projection
from pi_sessiond.store.tree import SessionTree

Json = dict[str, Any]
KEEPS = (0, 800, 5000, 20000)


def _fresh(tree: SessionTree, keep: int) -> CompactionPreparation | None:
    return prepare_compaction(tree.path(), CompactionSettings(keep_recent_tokens=keep))


def _facts(index: PreparationIndex) -> tuple[Any, ...]:
    count = len(index.entries)
    return (index.newest_usage(), index.system_entries(), index.previous_compaction(), list(index.offsets),
            index.flat, [index.tokens(i) for i in range(count)], index.messages(0, count))


def _same(tree: SessionTree, projection: Projection, keep: int) -> CompactionPreparation | None:
    """The preparation on ``projection`` (incremental), checked against a fresh one, and the index's facts."""
    settings = CompactionSettings(keep_recent_tokens=keep)
    ours = prepare_compaction(tree.path(), settings, projection)
    fresh = prepare_compaction(tree.path(), settings)
    assert ours == fresh  # by value: indices, messages, file ops, tokens before, previous summary
    if ours is not None and fresh is not None:
        assert ours.file_lists == fresh.file_lists
    if projection.log is not None and MEMO_KEY in projection.log.memo:
        fresh_index = PreparationIndex()
        fresh_index.catch_up(projection)
        assert _facts(projection.log.memo[MEMO_KEY]) == _facts(fresh_index)
    return ours


class Replay:
    """A tree and its live context, fed entry by entry; makes up context edits and system messages."""

    def __init__(self, seed: int) -> None:
        self.tree = SessionTree()
        self.live = LiveContext(self.tree)
        self.rng = random.Random(seed)
        self.made = 0
        self.edited: list[str] = []

    def add(self, data: Json) -> Entry:
        entry = Entry.from_data(data)
        self.tree.add(entry)
        self.live.on_append(entry)
        return entry

    def made_up(self, kind: str, **fields: Any) -> Entry:
        self.made += 1
        return self.add({"type": kind, "id": f"made{self.made:05d}", "parentId": self.tree.leaf_id,
                         "timestamp": "2026-01-01T00:00:00.000Z", **fields})

    def edit_something(self) -> None:
        """A context edit of a random entry on the path: often one whose loss or return changes a
        fact (the newest usage, a system message, the compaction, an entry edited before); omit, or
        replace (string or blocks)."""
        path = self.tree.path()
        targets = [e for e in path if e.type in ("message", "custom_message", "branch_summary", "compaction")]
        if not targets:
            return
        favourites = [e for e in targets[-30:] if e.role == "system" or e.type == "compaction"
                      or (e.role == "assistant" and "usage" in e.message)]
        favourites += [e for e in path if e.type == "compaction"][-1:]
        favourites += [self.tree.by_id[t] for t in self.edited[-5:]]
        if favourites and self.rng.random() < 0.4:
            target = self.rng.choice(favourites)
        else:
            target = self.rng.choice(targets[-40:] if self.rng.random() < 0.5 else targets)
        choice = self.rng.random()
        original = target.message.get("content") if target.type == "message" and target.message else None
        if choice < 0.4:
            replacement: Json | None = None
        elif choice < 0.55 and original is not None:  # as it was: an omitted entry comes back whole
            replacement = {"content": original}
        elif choice < 0.7:
            replacement = {"content": "shortened " * self.rng.randint(1, 400)}
        else:
            replacement = {"content": [{"type": "text", "text": "blocks " * self.rng.randint(1, 50)}]}
        self.edited.append(target.id)
        self.made_up("context_edit", targetId=target.id, replacement=replacement)

    def system_message(self) -> None:
        self.made_up("message", message={"role": "system", "content": "Be brief. " * self.rng.randint(1, 30),
                                         "sections": {"cwd": "/w"}, "timestamp": 1})


@pytest.mark.parametrize(("shape", "seed"), [("linear", 1), ("kitchen-sink", 2), ("pi16", 3), ("branchy", 4)])
def test_a_prepare_after_every_append_equals_a_fresh_one(shape: str, seed: int) -> None:
    lines = generate(seed=seed, entries=260, shape=shape, compaction_every=90)[1:]
    replay = Replay(seed)
    compared = 0
    for data in lines:
        replay.add(data)
        roll = replay.rng.random()
        if roll < 0.15:
            replay.edit_something()
        elif roll < 0.18:
            replay.system_message()
        for keep in KEEPS:  # each keep's budget walk is kept apart and moved on after the append
            compared += _same(replay.tree, replay.live.projection(), keep) is not None
    assert compared > len(lines)  # most steps had something to compare


def test_the_index_is_kept_between_appends_and_dropped_on_a_rebuild() -> None:
    lines = generate(seed=5, entries=200, shape="linear")[1:]
    replay = Replay(5)
    for data in lines:
        replay.add(data)
    first = replay.live.projection()
    assert _same(replay.tree, first, 2000) is not None
    assert first.log is not None
    index = first.log.memo[MEMO_KEY]
    flat = index.flat
    for _ in range(3):
        replay.made_up("message", message={"role": "user", "content": "go on", "timestamp": 2})
        later = replay.live.projection()
        assert later.log is first.log
        assert _same(replay.tree, later, 2000) is not None
        assert later.log.memo[MEMO_KEY] is index and index.flat is flat  # folded in, not rebuilt
    replay.tree.leaf_id = lines[100]["id"]  # the leaf moved: a new projection, a new log, a new index
    moved = replay.live.projection()
    assert moved.log is not first.log and MEMO_KEY not in moved.log.memo
    _same(replay.tree, moved, 2000)


def test_an_older_snapshot_gets_a_fresh_index() -> None:
    lines = generate(seed=6, entries=220, shape="kitchen-sink")[1:]
    replay = Replay(6)
    for data in lines:
        replay.add(data)
    old, old_path = replay.live.projection(), replay.tree.path()
    for _ in range(4):
        replay.edit_something()
        replay.made_up("message", message={"role": "user", "content": "more " * 300, "timestamp": 3})
    assert _same(replay.tree, replay.live.projection(), 1000) is not None
    assert old.log is not None and not old.log.memo[MEMO_KEY].can_follow(old)  # behind the shared index
    settings = CompactionSettings(keep_recent_tokens=1000)
    again = prepare_compaction(old_path, settings, old)
    assert again is not None and again == prepare_compaction(old_path, settings)


def test_file_ops_follow_edits_inside_the_summarized_range() -> None:
    replay = Replay(7)
    for data in generate(seed=7, entries=150, shape="linear")[1:]:
        replay.add(data)
    before = _same(replay.tree, replay.live.projection(), 500)
    assert before is not None and before.file_ops.read | before.file_ops.edited | before.file_ops.written
    calls = [e for e in replay.tree.path() if e.type == "message" and e.role == "assistant"
             and any(isinstance(b, dict) and b.get("type") == "toolCall" for b in e.message["content"])]
    for entry in calls[:-3]:  # omit every early tool call: their paths leave the lists
        replay.made_up("context_edit", targetId=entry.id, replacement=None)
    after = _same(replay.tree, replay.live.projection(), 500)
    assert after is not None and after.file_ops != before.file_ops


def test_omitting_and_restoring_a_system_message_the_newest_usage_and_the_compaction() -> None:
    replay = Replay(8)
    for data in generate(seed=8, entries=160, shape="linear", compaction_every=100)[1:]:
        replay.add(data)
    compaction = next(e for e in reversed(replay.tree.path()) if e.type == "compaction")
    replay.system_message()
    system = replay.tree.leaf_id
    replay.made_up("message", message={"role": "user", "content": "and now?", "timestamp": 4})
    newest = next(e for e in reversed(replay.tree.path()) if e.role == "assistant" and "usage" in e.message)
    assert _same(replay.tree, replay.live.projection(), 3000) is not None
    for target in (system, newest.id, compaction.id):
        entry = replay.tree.by_id[target]
        original = entry.message["content"] if entry.type == "message" else "summary, replaced"
        for replacement in (None, {"content": original}, None, {"content": original}):
            replay.made_up("context_edit", targetId=target, replacement=replacement)
            assert _same(replay.tree, replay.live.projection(), 3000) is not None

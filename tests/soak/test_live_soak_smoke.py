"""Smoke version of the live-writer soak (``tests/soak/live_soak.py``): 20 entries/s for 6 s."""

from __future__ import annotations

from pathlib import Path

from tests.soak.live_soak import Outcome, classify, run
from tests.unit.store.helpers import assistant, compaction, user, write_lines


def test_the_checker_sees_a_missed_entry_an_orphaned_turn_and_a_compaction_off_the_branch(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", [
        user("a", None, "hi"), assistant("b", "a", "yo"),
        user("w1", "b", "Pi's turn", 3),  # a side branch: the compaction below was parented on b
        compaction("c1", "w1", "a", 4),
        user("w2", "b", "Pi again", 5),  # the file's last entry: Pi's leaf after a reload
    ])
    out = Outcome(writer_ids=["w1", "w2"], compactions=["c1"])
    classify(path, {"a", "b", "w1", "c1"}, out)
    assert (out.missed, out.orphaned, out.off_branch) == (["w2"], ["w1"], ["c1"])
    assert not out.ok
    classify(path, {"a", "b", "w1", "c1", "w2"}, out)
    assert out.missed == []
    out.writer_raced = {"w1"}  # w1 forked by the writer's own stale read: not the daemon's doing
    classify(path, {"a", "b", "w1", "c1", "w2"}, out)
    assert (out.orphaned, out.orphaned_by_writer_race) == ([], ["w1"])


def test_a_pi_style_writer_beside_appends_and_forced_compactions_loses_nothing(tmp_path: Path) -> None:
    out = run(rate=20, seconds=6, compact_every=1.5, workdir=tmp_path)
    assert len(out.writer_ids) == 120
    assert out.compactions, f"no compaction was written: {dict(out.refusals)}"
    assert out.missed == [], "entries missed by fold-in"
    assert out.orphaned == [], "turns left on a side branch by the daemon"
    assert out.off_branch == [], "compactions off the live branch"

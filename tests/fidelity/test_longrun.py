"""Long runs: what the summary says after 46 compactions in a small window (split turns, directions once early).

The offline summarizer runs through the real ``pi-sessiond compact`` command
line, the models through the real daemon with a loopback provider whose
answers the gate has to repair: one leaves everything out, one copies the
previous summary's constraints as they stand (marks and all). After every
compaction the written summary must name each direction stated once (and
never revised) exactly once and never as superseded, lose none of them
(with or without a count), repeat no item outside the work logs, keep the
user's observations out of Constraints & Preferences, and stay bounded: its
size levels off instead of growing with the number of compactions.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.fidelity import models
from tests.fidelity.longrun import REVERSED_AT, SMALL, TINY, LongReport, Window, run_long
from tests.fidelity.runner import Cli, Daemon
from tests.fidelity.score import by_class
from tests.fidelity.sessions import TARGETS
from tests.loopback_provider import Fault, LoopbackProvider

SOFT = ("identifier", "decision", "todo", "preference", "goal", "readFile")


def offline_run(window: Window, folder: Path) -> LongReport:
    return run_long(Cli(folder / "agent", window.keep, window.window), window, folder)


def model_run(window: Window, folder: Path, name: str) -> LongReport:
    reply = {"incomplete": models.incomplete, "copies": models.copies_constraints}[name]
    with LoopbackProvider() as loopback:
        daemon = Daemon(folder / "agent", window.keep, Fault("ok", reply=reply), loopback, window.window)
        daemon.name = name
        try:
            return run_long(daemon, window, folder)
        finally:
            daemon.close()


RUNS = {"offline-24k": lambda f: offline_run(SMALL, f), "offline-9k": lambda f: offline_run(TINY, f),
        "incomplete-9k": lambda f: model_run(TINY, f, "incomplete"),
        "copies-9k": lambda f: model_run(TINY, f, "copies")}


@pytest.fixture(scope="module", params=list(RUNS))
def long_report(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LongReport]:
    yield RUNS[request.param](tmp_path_factory.mktemp(f"long-{request.param}"))


def test_every_compaction_was_written_and_nearly_every_one_split_a_turn(long_report: LongReport) -> None:
    assert long_report.failures == []
    assert len(long_report.looks) >= 40
    assert sum(long_report.splits) >= 40


def test_a_direction_stated_once_is_named_once_never_superseded_never_dropped(long_report: LongReport) -> None:
    for look in long_report.looks:
        assert (look.round, look.repeats) == (look.round, [])
        assert (look.round, look.marked) == (look.round, [])
        assert (look.round, look.gone, look.missing) == (look.round, [], [])


def test_no_item_is_repeated_and_observations_are_not_constraints(long_report: LongReport) -> None:
    for look in long_report.looks:
        assert (look.round, look.duplicates) == (look.round, [])
        assert (look.round, look.remarks) == (look.round, [])


def test_the_summary_size_levels_off(long_report: LongReport) -> None:
    sizes = long_report.sizes
    half = len(sizes) // 2
    assert max(sizes[half:]) <= 1.2 * max(sizes[:half]), sizes  # no sustained growth
    assert max(sizes) < 3_000, sizes  # a fraction of the 9k window


def test_hard_classes_are_kept_and_a_reversed_preference_replaces_the_earlier_one(long_report: LongReport) -> None:
    table = by_class(long_report.hits)
    for cls in TARGETS:
        kept, total = table[cls]
        assert kept == total, (cls, table[cls])
    # from the compaction after the one that summarized the reversal, only the later preference is named
    late = [h for h in long_report.hits if h.fact.cls == "preference" and h.round > max(REVERSED_AT)]
    assert late and all(h.kept for h in late), [h.round for h in late if not h.kept]


def test_the_offline_summarizer_keeps_the_soft_classes(long_report: LongReport) -> None:
    if long_report.summarizer != "offline":
        pytest.skip("the models' soft classes are what the model writes")
    table = by_class(long_report.hits)
    for cls in SOFT:
        kept, total = table[cls]
        assert kept >= 0.8 * total, (cls, table[cls])

"""The cyclic collector around loads (``store/files.py`` ``gc_paused``): a freeze keeps for good the
cyclic garbage alive at that moment, so repeated small work does not freeze."""

from __future__ import annotations

import gc
from pathlib import Path

from pi_sessiond.store import files
from pi_sessiond.store.session import Session


def test_a_small_projection_rebuild_freezes_nothing(tmp_path: Path) -> None:
    """A freeze keeps for good the cyclic garbage of other threads alive at that moment: a rebuild after
    every compaction or navigation must not make one."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n')
    session = Session.open(path)
    frozen = gc.get_freeze_count()
    session.context()
    assert gc.get_freeze_count() == frozen


def test_a_load_and_big_work_still_pause_and_freeze() -> None:
    """What keeps the loop from a stall of a whole-heap walk after a load (bench_scale.py --parts stalls)."""
    kept: list[list[list[int]]] = []  # each round's objects stay alive: a freed frozen object leaves the count
    try:
        for size, freezes in ((None, True), (files.PAUSE_MIN_BYTES, True), (files.PAUSE_MIN_BYTES - 1, False)):
            frozen = gc.get_freeze_count()
            with files.gc_paused(size):
                loaded = [[n] for n in range(1000)]  # lists: always tracked by the collector
                kept.append(loaded)
                assert gc.isenabled() is not freezes
            assert (gc.get_freeze_count() >= frozen + len(loaded)) is freezes and gc.isenabled()
    finally:
        gc.unfreeze()

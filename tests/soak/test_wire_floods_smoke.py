"""Smoke size of ``python -m tests.soak.wire_floods``: two 8 MiB batch bombs (larger than the few megabytes
that took gigabytes) and 300 connections at once (more than the hundreds that exhausted the fds)."""

from __future__ import annotations

from pathlib import Path

from tests.soak.wire_floods import Report, batch_flood, check, connection_flood


def test_batch_bombs_are_refused_with_bounded_memory() -> None:
    report = Report()
    batch_flood(report, mib=8, batches=2)
    assert report.batches == 2 and report.refused == 2
    assert check(report, rss_bound_mib=400) == []


def test_a_connection_flood_hits_the_cap_and_the_daemon_serves_after(tmp_path: Path) -> None:
    report = Report()
    connection_flood(report, 300, tmp_path)
    assert report.busy >= 300 - 64
    assert check(report) == []

"""Smoke size of ``python -m tests.soak.provider_soak``: ~40 summary jobs through a faulty provider, < 40 s."""

from __future__ import annotations

import time
from pathlib import Path

from tests.soak.provider_soak import SECRET, run_soak


def test_forty_faulty_jobs_write_nothing_partial_report_clear_errors_and_never_leak_the_key(tmp_path: Path) -> None:
    started = time.monotonic()
    report = run_soak(40, tmp_path, concurrency=16, sessions=20, seed_value=int(time.time()) % 10_000,
                      sample_every=10)
    leaks_or_rss = ("leak:", "RSS grew")  # too few jobs to judge; the full script does
    problems = [p for p in report.problems if not p.startswith(leaks_or_rss)]
    assert report.jobs == 40
    assert problems == [], problems
    assert report.secret_hits == []
    assert report.tasks[1] <= report.tasks[0]
    failed = sum(n for outcome, n in report.outcomes.items() if ":-32005:" in outcome)
    assert failed > 0 and any(":ok" in o for o in report.outcomes), report.outcomes  # both paths were taken
    modes = set(report.provider_modes)
    assert {"429", "500"} <= modes and modes & {"reset", "reset_mid_stream"}, report.provider_modes
    assert SECRET not in "".join(report.problems)
    assert time.monotonic() - started < 40

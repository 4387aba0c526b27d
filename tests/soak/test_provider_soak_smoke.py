"""Smoke size of ``python -m tests.soak.provider_soak``: 40 summary jobs through a faulty provider.

The seed is fixed, so the faults each job scripts are the same on every run; which
job's request meets which fault, and how long it takes, depends on the machine.
"""

from __future__ import annotations

from pathlib import Path

from tests.soak.provider_soak import SECRET, run_soak


def test_forty_faulty_jobs_write_nothing_partial_report_clear_errors_and_never_leak_the_key(tmp_path: Path) -> None:
    # seed 5: the 40 jobs script every fault mode between them
    report = run_soak(40, tmp_path, concurrency=16, sessions=20, seed_value=5, sample_every=10)
    leaks_or_rss = ("leak:", "RSS grew")  # too few jobs to judge; the full script does
    problems = [p for p in report.problems if not p.startswith(leaks_or_rss)]
    assert report.jobs == 40
    assert problems == [], problems
    assert report.secret_hits == []
    assert report.tasks[1] <= report.tasks[0]
    failed = sum(n for outcome, n in report.outcomes.items() if ":-32005:" in outcome)
    assert failed > 0 and any(":ok" in o for o in report.outcomes), report.outcomes  # both paths were taken
    scripted = set(report.scripted_modes)
    assert {"429", "500"} <= scripted and scripted & {"reset", "reset_mid_stream"}, report.scripted_modes
    assert set(report.provider_modes) - {"ok"}, report.provider_modes  # faults reached the provider
    assert SECRET not in "".join(report.problems)

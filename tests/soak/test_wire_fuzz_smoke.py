"""Smoke size of ``python -m tests.soak.wire_fuzz``: 200 inputs (a fixed seed) against one real daemon."""

from __future__ import annotations

from pathlib import Path

from tests.soak.wire_fuzz import FuzzRun, Input, run_fuzz


def test_two_hundred_inputs_leave_the_daemon_serving_and_the_sessions_untouched(tmp_path: Path) -> None:
    report = run_fuzz(200, tmp_path, seed_value=3)
    assert report.inputs == 200
    assert report.crashes == [], report.crashes
    assert report.file_changes == []
    assert report.still_answers and report.final_exit_code == 0
    assert sum(report.codes.values()) > 100, "the inputs reached the daemon and were answered"


def test_a_body_over_the_limit_is_answered_too_large_without_being_buffered(tmp_path: Path) -> None:
    run = FuzzRun(tmp_path, limit=4096)
    head = b'{"jsonrpc":"2.0","id":"big-1","method":"pi/getStats","params":{"x":"'
    body = head + b"a" * (8 << 20) + b'"}}'
    run.feed(Input("too-large", b"Content-Length: %d\r\n\r\n%b" % (len(body), body), "too-large", "big-1"))
    report = run.finish()
    assert report.crashes == [] and report.codes == {}  # the -32008 went to the check, not to the counters
    assert report.too_large_peak_growth_kib < 2048


def test_a_frame_cut_short_by_eof_is_a_counted_kill_and_the_daemon_is_restarted(tmp_path: Path) -> None:
    run = FuzzRun(tmp_path)
    run.feed(Input("truncated-eof", b'Content-Length: 50\r\n\r\n{"jsonrpc":', "eof"))
    run.feed(Input("message", b'Content-Length: 2\r\n\r\n{}'))
    report = run.finish()
    assert report.kills == {"truncated-eof": 1} and report.restarts == 1
    assert report.crashes == [] and report.codes == {"-32700": 1, "-32600": 1}  # the cut frame is answered first


def test_failed_notification_handler_is_logged_without_a_traceback(tmp_path: Path) -> None:
    run = FuzzRun(tmp_path)
    run.feed(Input("message", b'Content-Length: 45\r\n\r\n{"jsonrpc": "2.0", "method": "pi/getContext"}'))
    report = run.finish()
    assert report.crashes == []

"""Which lock bodies make a session live in Pi, and how Pi's answers to a forwarded request map to errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pi_sessiond.errors import NothingToCompact, Rejected, SummarizerFailed
from pi_sessiond.service.compacting.forwarding import _answer
from pi_sessiond.service.sessions.livewriter import live_pi, refuse
from pi_sessiond.store import lockinfo


def with_body(tmp_path: Path, text: str) -> Path:
    session = tmp_path / "s.jsonl"
    lockinfo.lock_path(session).write_text(text)
    return session


@pytest.mark.parametrize(("body", "live"), [
    ('{"pid": %(me)d, "program": "pi", "since": "t", "socket": "/run/p.sock"}', True),
    ('{"pid": %(me)d, "program": "pi", "since": "t"}', False),  # let go: no socket any more
    ('{"pid": %(me)d, "program": "pi-sessiond", "since": "t", "socket": "/run/p.sock"}', False),
    ('{"pid": 4194999, "program": "pi", "since": "t", "socket": "/run/p.sock"}', False),  # that Pi is gone
    ("", False),
])
def test_a_session_is_live_in_pi_only_while_a_running_pi_names_its_socket(tmp_path: Path, body: str,
                                                                          live: bool) -> None:
    session = with_body(tmp_path, body % {"me": os.getpid()})
    assert (live_pi(session) is not None) is live
    assert live_pi(None) is None


def test_pis_answers_become_results_or_typed_errors() -> None:
    assert _answer({"id": 1, "result": {"entry": {}}}) == {"entry": {}}
    for reason, kind in [("nothingToCompact", NothingToCompact), ("cancelled", Rejected),
                         ("summarizerFailed", SummarizerFailed), ("", SummarizerFailed)]:
        with pytest.raises(kind, match=r"^Pi: no"):
            _answer({"id": 1, "error": {"code": -1, "message": "no", "data": {"reason": reason}}})


def test_what_only_pi_can_do_names_the_command_and_the_holder(tmp_path: Path) -> None:
    body = lockinfo.body_for("pi", pid=7, socket="/run/p.sock")
    refused = refuse(body, "navigate", "/tree")
    assert refused.reason == "liveWriter"
    assert refused.data == {"holder": {"pid": 7, "program": "pi", "socket": "/run/p.sock"}, "piCommand": "/tree"}
    assert "type /tree in Pi" in refused.message

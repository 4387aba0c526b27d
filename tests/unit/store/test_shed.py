"""Shedding a session's parsed state: the same contexts, projections and appends afterwards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pi_sessiond.examples.generator import write_stream
from pi_sessiond.store.session import Session

USER = {"type": "message", "message": {"role": "user", "content": "one more thing", "timestamp": 1}}


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def parsed(session: Session) -> int:
    """How many entries are made and hold a parsed body."""
    return sum(entry is not None and entry._data is not None for entry in session.tree.entries._objs)


def test_a_shed_session_answers_as_before_and_appends_as_a_fresh_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_stream(path, seed=2, entries=400, shape="pi16")  # system messages, context edits, compactions
    session = Session.open(path)
    context = as_json(list(session.context().messages))
    projected = as_json([p.entry.data for p in session.projection().entries])
    given = len(session.tree.entries.given())  # made at the open (not messages): kept, only their bodies go
    assert parsed(session) == session.tree.entries.count_made() > given + 300
    session.shed()
    assert parsed(session) == 0
    assert session.tree.entries.count_made() == given
    assert as_json(list(session.context().messages)) == context
    assert as_json([p.entry.data for p in session.projection().entries]) == projected
    session.shed()
    session.append([USER])
    assert as_json(list(session.context().messages)) == [*context, USER["message"]]
    assert as_json(list(session.context().messages)) == as_json(list(Session.open(path).context().messages))

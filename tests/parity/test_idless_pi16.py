"""Entries without an id in v2/v3 files are read as Pi 1.6.0 reads them (a differential test).

Pi makes the file's last entry the leaf whatever its id, and nothing can name
an id-less entry as its parent. Each file below is opened by Pi 1.6.0 and by
us; the leaf's context (messages, thinking level, model) must be the same.
Entries without an id before the last are dropped on our side (a deliberate
difference: ``test_fix_idless_entries_before_the_last_are_dropped_where_pi_keeps_them``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import PiOracle

from pi_protocol.settings import Settings
from pi_sessiond.service.stats import session_stats
from pi_sessiond.store.session import Session

pytestmark = pytest.mark.parity

HEADER = {"type": "session", "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"}


def message(text: str, n: int, *, entry_id: str | None = None, parent: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "message", "timestamp": f"2025-01-01T00:00:{n:02d}.000Z",
                             "message": {"role": "user", "content": text, "timestamp": n}}
    if entry_id is not None:
        entry = {"type": "message", "id": entry_id, "parentId": parent, **entry}
    elif parent is not None:
        entry["parentId"] = parent
    return entry


CASES: dict[str, list[dict[str, Any]]] = {
    "all-idless": [message("first", 1), message("second", 2)],
    "idless-last-with-parent": [message("a", 1, entry_id="a1"), message("b", 2, parent="a1")],
    "idless-in-the-middle": [message("a", 1, entry_id="a1"), message("lost", 2), message("c", 3, entry_id="c1",
                                                                                        parent="a1")],
    "unknown-trailing-type": [message("a", 1, entry_id="a1"), {"type": "future_thing", "timestamp": "t"}],
    "unknown-trailing-type-with-parent": [message("a", 1, entry_id="a1"),
                                          {"type": "future_thing", "parentId": "a1", "timestamp": "t"}],
}


@pytest.mark.parametrize("version", [2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_idless_entries_give_pi_s_context(pi16: PiOracle, tmp_path: Path, case: str, version: int) -> None:
    path = tmp_path / f"{case}.jsonl"
    lines = [{**HEADER, "version": version}, *CASES[case]]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (pi,) = pi16.call("context", file=str(path))
    ours = Session.open(path).context()
    assert json.dumps(list(ours.messages)) == json.dumps(pi["messages"]), case
    assert (ours.thinking_level, ours.model) == (pi["thinkingLevel"], pi["model"]), case


def test_fix_idless_entries_before_the_last_are_dropped_where_pi_keeps_them(pi16_agent: PiOracle,
                                                                            tmp_path: Path) -> None:
    """Pi 1.6.0 keeps every entry without an id: in its entries, in its session stats, and in ``getTree``,
    which keys nodes by id and so shows each one as the last id-less entry. Nothing can name one as its
    parent and only the last can be the leaf, so we drop the others with a warning (docs/deviations.md).
    The contexts agree."""
    path = tmp_path / "idless.jsonl"
    lines = [{**HEADER, "version": 3}, message("lost", 1), message("also lost", 2), message("a", 3, entry_id="a1")]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    pi = pi16_agent.call("load", file=str(path))
    assert [e.get("id") for e in pi["entries"]] == [None, None, "a1"]
    assert [(n.get("id"), n["depth"]) for n in pi["tree"]] == [(None, 0), (None, 0), ("a1", 0)]
    assert pi16_agent.call("stats", file=str(path))["userMessages"] == 3
    ours = Session.open(path)
    assert [e.id for e in ours.entries] == ["a1"] and ours.leaf_id == pi["leafId"] == "a1"
    assert [(w.line, w.message) for w in ours.warnings] == [(2, "entry without an id skipped"),
                                                             (3, "entry without an id skipped")]
    assert [n["id"] for n in pi["tree"] if "id" in n] == [e.id for e, _ in ours.tree.walk()]
    assert session_stats(ours, Settings()).message_counts["userMessages"] == 1
    (context,) = pi16_agent.call("context", file=str(path))
    assert json.dumps(list(ours.context().messages)) == json.dumps(context["messages"])

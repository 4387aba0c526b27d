"""Opening parses only what the first context needs; what is read lazily agrees with a full parse."""

from __future__ import annotations

import random
from pathlib import Path

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.context import build_session_context
from pi_sessiond.store.session import Session


def parsed(session: Session) -> set[str]:
    return {e.id for e in session.entries if e._data is not None}


def test_the_first_context_parses_only_the_entries_it_contains(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, generate(seed=3, entries=3000, shape="long", compaction_every=1000))
    session = Session.open(path)
    eager = parsed(session)  # non-message entries (compactions, labels, settings) are parsed at load
    assert all(session.entry(i).type != "message" for i in eager)
    projection = session.projection()
    context_ids = {p.entry.id for p in projection.entries}
    newly = parsed(session) - eager
    assert len(context_ids) < len(session.entries) // 2  # the newest compaction summarized most of it
    # The context's own entries, plus at most the one assistant message the model setting comes from.
    assert newly - context_ids == set() or len(newly - context_ids) == 1
    assert context_ids & {e.id for e in session.entries if e.type == "message"} <= parsed(session)
    fresh = Session.open(path)
    for entry in fresh.entries:
        entry.data  # noqa: B018 - parse everything: the same context must come out
    assert list(fresh.context().messages) == list(session.context().messages)
    assert fresh.context().model == session.context().model


def test_the_role_read_with_the_skeleton_is_the_parsed_role(tmp_path: Path, real_session: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, generate(seed=5, entries=800, shape="branchy"))
    for source in (path, real_session):
        session = Session.open(source)
        skeleton = [e.role for e in session.entries]
        for entry in session.entries:
            entry.data  # noqa: B018
        assert skeleton == [e.role for e in session.entries]
        assert sum(r is not None for r in skeleton) > 0


def test_many_edits_of_random_targets_keep_the_live_context_exact(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write(path, generate(seed=7, entries=400, shape="linear"))
    session = Session.open(path)
    session.path = None
    rng = random.Random(7)
    for i in range(300):  # > 64 shifts of both signs, so the tail renumbering runs several times
        ids = [p.entry.id for p in session.projection().entries if p.entry.role in ("user", "assistant")]
        target = ids[-1] if i % 3 == 0 else rng.choice(ids)
        replacement = None if rng.random() < 0.4 else {"content": f"edit {i}"}
        session.append([{"type": "context_edit", "targetId": target, "replacement": replacement}])
        if i % 2:
            session.append([{"type": "message", "message": {"role": "user", "content": f"u{i}", "timestamp": i}}])
        if i % 25 == 0 or i == 299:
            fresh = build_session_context(session.entries, session.leaf_id, session.tree.by_id)
            assert list(session.context().messages) == list(fresh.messages)


def test_fix_a_message_line_whose_body_is_not_json_contributes_nothing(tmp_path: Path) -> None:
    """Pi skips the line at load; we read only its skeleton at load, so it stays in the tree, without content."""
    header = '{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}'
    good = ('{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
            '"message":{"role":"assistant","content":[],"provider":"p","model":"m","timestamp":1}}')
    bad = ('{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:02.000Z",'
           '"message":{"role":"assistant",,"provider":"q","model":"n","timestamp":2}}')
    path = tmp_path / "s.jsonl"
    path.write_text(f"{header}\n{good}\n{bad}\n")
    session = Session.open(path)
    assert session.entry("b").role == "assistant"  # the skeleton's role, before the body is read
    context = session.context()
    assert [m["role"] for m in context.messages] == ["assistant"]
    assert context.model == {"provider": "p", "modelId": "m"}  # the broken line sets nothing
    assert session.entry("b").role is None and session.entry("b").message is None

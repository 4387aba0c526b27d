"""buildSessionContext: Pi's own build-context cases, ported."""

from __future__ import annotations

from tests.unit.store.helpers import assistant, compaction, ts, user

from pi_sessiond.store.context import build_session_context
from pi_sessiond.store.entry import Entry


def entries(*rows: dict) -> list[Entry]:
    return [Entry.from_data(r) for r in rows]


def roles(ctx) -> list[str]:  # type: ignore[no-untyped-def]
    return [m["role"] for m in ctx.messages]


def test_empty_and_null_leaf() -> None:
    assert build_session_context([]).messages == []
    es = entries(user("u1", None, "a"))
    ctx = build_session_context(es, None)
    assert (list(ctx.messages), ctx.thinking_level, ctx.model) == ([], "off", None)


def test_compaction_summary_then_kept_then_new() -> None:
    es = entries(user("u1", None, "1", 1), assistant("a1", "u1", "1", 2), user("u2", "a1", "2", 3),
                 assistant("a2", "u2", "2", 4), compaction("c1", "a2", "u2", 5),
                 user("u3", "c1", "3", 6), assistant("a3", "u3", "3", 7))
    ctx = build_session_context(es)
    assert roles(ctx) == ["compactionSummary", "user", "assistant", "user", "assistant"]
    first = ctx.messages[0]
    assert first == {"role": "compactionSummary", "summary": "summary c1", "tokensBefore": 100,
                     "timestamp": 1767225605000}
    assert [m.get("content") for m in ctx.messages[1::2]] == ["2", "3"]


def test_latest_of_two_compactions_wins_and_missing_kept_id_keeps_nothing_before() -> None:
    es = entries(user("u1", None, "1", 1), assistant("a1", "u1", "1", 2), compaction("c1", "a1", "u1", 3),
                 user("u2", "c1", "2", 4), assistant("a2", "u2", "2", 5), compaction("c2", "a2", "gone", 6),
                 user("u3", "c2", "3", 7))
    ctx = build_session_context(es)
    assert roles(ctx) == ["compactionSummary", "user"]
    assert ctx.messages[0]["summary"] == "summary c2"


def test_explicit_leaf_selects_a_branch_and_unknown_leaf_falls_back_to_last() -> None:
    es = entries(user("u1", None, "1", 1), assistant("a1", "u1", "A", 2), assistant("b1", "u1", "B", 3))
    assert build_session_context(es, "a1").messages[1]["content"][0]["text"] == "A"
    assert build_session_context(es, "nope").messages[1]["content"][0]["text"] == "B"
    assert build_session_context(es, "").messages[1]["content"][0]["text"] == "B"


def test_model_thinking_branch_summary_and_custom_message() -> None:
    es = entries(
        {"type": "model_change", "id": "m", "parentId": None, "timestamp": ts(1), "provider": "p0", "modelId": "x"},
        {"type": "thinking_level_change", "id": "t", "parentId": "m", "timestamp": ts(2), "thinkingLevel": "high"},
        user("u1", "t", "hi", 3),
        {"type": "branch_summary", "id": "b", "parentId": "u1", "timestamp": ts(4), "fromId": "zz", "summary": "S"},
        {"type": "branch_summary", "id": "b2", "parentId": "b", "timestamp": ts(5), "fromId": "zz", "summary": ""},
        {"type": "custom_message", "customType": "note", "content": "c", "display": False,
         "id": "cm", "parentId": "b2", "timestamp": ts(6)},
        {"type": "custom", "customType": "state", "data": {"k": 1}, "id": "cu", "parentId": "cm", "timestamp": ts(7)},
        {"type": "label", "id": "l", "parentId": "cu", "timestamp": ts(8), "targetId": "u1", "label": "L"},
    )
    ctx = build_session_context(es)
    assert roles(ctx) == ["user", "branchSummary", "custom"]
    assert ctx.thinking_level == "high"
    assert ctx.model == {"provider": "p0", "modelId": "x"}
    assert ctx.messages[1] == {"role": "branchSummary", "summary": "S", "fromId": "zz", "timestamp": 1767225604000}
    assert ctx.messages[2] == {"role": "custom", "customType": "note", "content": "c", "display": False,
                               "timestamp": 1767225606000}
    es.append(Entry.from_data(assistant("a", "l", "ok", 9, model="m9")))
    assert build_session_context(es).model == {"provider": "p", "modelId": "m9"}


def test_orphan_gives_only_its_own_message() -> None:
    es = entries(user("u1", None, "1", 1), assistant("a1", "missing", "orphan", 2))
    assert roles(build_session_context(es)) == ["assistant"]

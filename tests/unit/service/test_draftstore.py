"""The draft store: found by session and id, expiring, answering why a draft cannot be committed."""

from __future__ import annotations

import pytest

from pi_protocol.live import Draft
from pi_sessiond.service.compacting.draftstore import DraftStore, UnknownDraft


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def draft(draft_id: str, session_id: str = "s1") -> Draft:
    return Draft(draft_id=draft_id, session_id=session_id, kind="compaction", summary="## Goal\n- x\n")


def state_of(store: DraftStore, session_id: str, draft_id: str) -> str:
    with pytest.raises(UnknownDraft) as info:
        store.get(session_id, draft_id)
    assert info.value.reason == "invalidParams" and info.value.data["draftId"] == draft_id
    return str(info.value.data["draftState"])


def test_a_draft_expires_after_its_time_and_says_so() -> None:
    clock = Clock()
    store = DraftStore(clock=clock, seconds=60)
    kept = store.add(draft("d1"))
    assert kept.draft.expires_at == "1970-01-12T13:47:40.000Z"  # 1_000_060 s after the epoch
    assert store.get("s1", "d1") is kept
    clock.now += 59.9
    assert store.drafts("s1") == [kept]
    clock.now += 0.1
    assert state_of(store, "s1", "d1") == "expired" and store.drafts("s1") == []


def test_committed_unknown_and_other_sessions_drafts_are_refused() -> None:
    store = DraftStore(clock=Clock())
    store.add(draft("d1")).committed = True
    assert state_of(store, "s1", "d1") == "committed"
    assert state_of(store, "s1", "nope") == "unknown"
    store.add(draft("d2"))
    assert state_of(store, "s2", "d2") == "unknown"  # a draft belongs to its session


def test_the_oldest_drafts_beyond_the_cap_and_a_closed_sessions_drafts_are_dropped() -> None:
    store = DraftStore(clock=Clock(), per_session=2)
    for name in ("d1", "d2", "d3"):
        store.add(draft(name))
    assert [s.draft.draft_id for s in store.drafts("s1")] == ["d3", "d2"]
    assert state_of(store, "s1", "d1") == "unknown"
    store.forget("s1")
    assert store.drafts("s1") == [] and state_of(store, "s1", "d3") == "unknown"

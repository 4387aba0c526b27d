"""The connections of one daemon share its sessions: holds, closes and who hears what (in process)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_protocol import methods
from pi_protocol.params import AppendParams, OpenSessionParams, SessionParams
from pi_sessiond.errors import UnknownSession
from pi_sessiond.rpc.sharing import SharedSessions

from .fakes import Events, Hooks, Progress, session_file, user


def connect(shared: SharedSessions) -> tuple[object, Events]:
    events = Events()
    return shared.daemon_factory(events, Hooks(), Progress()), events


async def test_two_connections_share_a_session_and_each_hears_the_others_appends(tmp_path: Path) -> None:
    shared = SharedSessions(tmp_path / "sessions")
    (first, heard_first), (second, heard_second) = connect(shared), connect(shared)
    (third, heard_third) = connect(shared)
    path = session_file(tmp_path)
    a = first.open_session(OpenSessionParams(path=str(path))).session_id  # type: ignore[attr-defined]
    b = second.open_session(OpenSessionParams(path=str(path))).session_id  # type: ignore[attr-defined]
    assert a == b
    await second.append(AppendParams(session_id=b, entries=[user("from the second client")]))  # type: ignore[attr-defined]
    assert [p["reason"] for p in heard_first.of(methods.SESSION_CHANGED)] == ["append"]
    assert len(heard_second.of(methods.SESSION_CHANGED)) == 1
    assert heard_third.sent == []  # it holds no session
    await second.close_session(SessionParams(session_id=b))  # type: ignore[attr-defined]
    await first.append(AppendParams(session_id=a, entries=[user("still open")]))  # type: ignore[attr-defined]
    assert len(heard_second.of(methods.SESSION_CHANGED)) == 1  # released: no longer hears it
    await third.aclose()  # type: ignore[attr-defined]
    assert a in shared.registry
    await first.aclose()  # type: ignore[attr-defined]
    assert a not in shared.registry  # nobody holds it: closed
    with pytest.raises(UnknownSession):
        shared.registry.get(a)

"""The agents' last provider requests (``pi/recordRequest``), one per open session, in memory only.

Contracts:
- A body is never written to disk, logged, or put in a notification or an
  error; :meth:`RecordedRequests.record` keeps it as given (a replay sends it
  unchanged) and the newest one replaces the older.
- ``sentAt`` (ms since the epoch) defaults to the moment it arrives.
- Closing a session forgets its request.
"""

from __future__ import annotations

import time

from pi_protocol.params import RecordRequestParams
from pi_sessiond.pipeline.cachereuse import AgentRequest


class RecordedRequests:
    """The newest recorded request of each session, by the daemon's session key."""

    def __init__(self) -> None:
        self._by_session: dict[str, AgentRequest] = {}

    def __repr__(self) -> str:  # never the bodies
        return f"RecordedRequests({len(self._by_session)} sessions)"

    def record(self, key: str, params: RecordRequestParams) -> None:
        """Keep ``params``' body as the session's newest request."""
        sent = params.sent_at / 1000 if params.sent_at is not None else time.time()
        self._by_session[key] = AgentRequest(provider=params.provider, model=params.model, body=params.body,
                                             sent_at=sent)

    def get(self, key: str) -> AgentRequest | None:
        """The session's newest recorded request, or ``None``."""
        return self._by_session.get(key)

    def forget(self, key: str) -> None:
        """Drop the session's request (it was closed)."""
        self._by_session.pop(key, None)

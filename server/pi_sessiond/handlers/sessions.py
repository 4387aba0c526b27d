"""Sessions: create, open, close, list, fork, append."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_protocol import methods
from pi_protocol.params import (
    AppendParams,
    CreateSessionParams,
    ForkParams,
    ListSessionsParams,
    OpenSessionParams,
    SessionParams,
)
from pi_protocol.results import AppendResult, ListSessionsResult, SessionInfo

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer
    from pi_sessiond.service.daemon import Daemon


def register(server: PiServer, daemon: Daemon) -> None:
    """Session lifecycle: create, open, close, list, fork, and ``pi/append``."""

    @server.method(methods.CREATE_SESSION, CreateSessionParams)
    def create_session(params: CreateSessionParams) -> SessionInfo:
        return daemon.create_session(params)

    @server.method(methods.OPEN_SESSION, OpenSessionParams)
    def open_session(params: OpenSessionParams) -> SessionInfo:
        return daemon.open_session(params)

    @server.method(methods.CLOSE_SESSION, SessionParams)
    async def close_session(params: SessionParams) -> None:
        await daemon.close_session(params)

    @server.method(methods.LIST_SESSIONS, ListSessionsParams)
    def list_sessions(params: ListSessionsParams) -> ListSessionsResult:
        return daemon.list_sessions(params)

    @server.method(methods.FORK, ForkParams)
    def fork(params: ForkParams) -> SessionInfo:
        return daemon.fork(params)

    @server.method(methods.APPEND, AppendParams)
    async def append(params: AppendParams) -> AppendResult:
        return await daemon.append(params)

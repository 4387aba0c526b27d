"""Reading a session: context, tree, entries, labels, stats, token estimates."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_protocol import ContextResult, methods
from pi_protocol.params import (
    EstimateTokensParams,
    GetContextParams,
    GetEntriesParams,
    GetTreeParams,
    SessionParams,
    SetLabelParams,
)
from pi_protocol.results import EntriesResult, EstimateTokensResult, IdResult, StatsResult, TreeResult

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer
    from pi_sessiond.service.daemon import Daemon


def register(server: PiServer, daemon: Daemon) -> None:
    """``pi/getContext``, ``pi/getTree``, ``pi/getEntries``, ``pi/setLabel``, ``pi/getStats``, ``pi/estimateTokens``."""

    @server.method(methods.GET_CONTEXT, GetContextParams)
    def get_context(params: GetContextParams) -> ContextResult:
        return daemon.get_context(params)

    @server.method(methods.GET_TREE, GetTreeParams)
    def get_tree(params: GetTreeParams) -> TreeResult:
        return daemon.get_tree(params)

    @server.method(methods.GET_ENTRIES, GetEntriesParams)
    def get_entries(params: GetEntriesParams) -> EntriesResult:
        return daemon.get_entries(params)

    @server.method(methods.SET_LABEL, SetLabelParams)
    def set_label(params: SetLabelParams) -> IdResult:
        return daemon.set_label(params)

    @server.method(methods.GET_STATS, SessionParams)
    def get_stats(params: SessionParams) -> StatsResult:
        return daemon.get_stats(params)

    @server.method(methods.ESTIMATE_TOKENS, EstimateTokensParams)
    def estimate_tokens(params: EstimateTokensParams) -> EstimateTokensResult:
        return daemon.estimate_tokens(params)

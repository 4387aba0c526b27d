"""Requests that run a summarizer: compact, navigate with a summary, overflow recovery."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_protocol import CompactResult, NavigateResult, methods
from pi_protocol.params import CompactParams, NavigateTreeParams, ReportOverflowParams
from pi_sessiond.service.interface import ProgressFactory

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer
    from pi_sessiond.service.daemon import Daemon


def register(server: PiServer, daemon: Daemon) -> None:
    """``pi/compact``, ``pi/navigateTree``, ``pi/reportOverflow`` (cancellable, with progress)."""

    @server.method(methods.COMPACT, CompactParams, progress=True)
    async def compact(params: CompactParams, progress: ProgressFactory) -> CompactResult:
        return await daemon.compact(params, progress)

    @server.method(methods.NAVIGATE_TREE, NavigateTreeParams, progress=True)
    async def navigate_tree(params: NavigateTreeParams, progress: ProgressFactory) -> NavigateResult:
        return await daemon.navigate_tree(params, progress)

    @server.method(methods.REPORT_OVERFLOW, ReportOverflowParams, progress=True)
    async def report_overflow(params: ReportOverflowParams, progress: ProgressFactory) -> CompactResult:
        return await daemon.report_overflow(params, progress)

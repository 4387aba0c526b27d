"""Settings: ``pi/getSettings`` and ``pi/updateSettings``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pi_protocol import methods
from pi_protocol.params import GetSettingsParams, UpdateSettingsParams
from pi_protocol.results import SettingsResult

if TYPE_CHECKING:
    from pi_sessiond.app import PiServer
    from pi_sessiond.service.daemon import Daemon


def register(server: PiServer, daemon: Daemon) -> None:
    """``pi/getSettings`` (with each value's source) and ``pi/updateSettings``."""

    @server.method(methods.GET_SETTINGS, GetSettingsParams)
    def get_settings(params: GetSettingsParams) -> SettingsResult:
        return daemon.get_settings(params)

    @server.method(methods.UPDATE_SETTINGS, UpdateSettingsParams)
    def update_settings(params: UpdateSettingsParams) -> SettingsResult:
        return daemon.update_settings(params)

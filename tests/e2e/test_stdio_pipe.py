"""The real daemon on stdio widens its stdout pipe, and a reply bigger than the pipe still arrives whole."""

from __future__ import annotations

import sys

import pytest
from tests.e2e.stdio_daemon import daemon

from pi_sessiond.wire.stdio import PIPE_BYTES

fcntl = pytest.importorskip("fcntl")
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")


def test_the_daemon_widens_its_stdout_pipe_and_big_replies_arrive_whole() -> None:
    with open("/proc/sys/fs/pipe-max-size") as f:
        expected = min(PIPE_BYTES, int(f.read()))
    text = "x" * (3 * PIPE_BYTES)  # echoed back: a reply three times the widened pipe
    with daemon(env={"PI_SESSIOND_DEBUG_METHODS": "1"}, init=False) as d:
        d.ok("initialize", {"processId": None, "rootUri": None, "capabilities": {}})
        assert d.proc.stdout is not None
        assert fcntl.fcntl(d.proc.stdout.fileno(), fcntl.F_GETPIPE_SZ) >= expected
        assert d.ok("debug/echo", {"text": text}) == {"text": text}

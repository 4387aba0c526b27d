"""``stdio.widen_pipe``: a stdout pipe is made to hold a big reply, nothing else is touched."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest

from pi_sessiond.wire.stdio import PIPE_BYTES, widen_pipe

fcntl = pytest.importorskip("fcntl")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="F_SETPIPE_SZ is Linux's")


def _max_pipe_bytes() -> int:
    with open("/proc/sys/fs/pipe-max-size") as f:
        return int(f.read())


@linux_only
def test_a_pipe_is_widened_to_the_reply_size() -> None:
    read, write = os.pipe()
    try:
        assert fcntl.fcntl(write, fcntl.F_GETPIPE_SZ) < PIPE_BYTES  # the kernel's default is smaller
        size = widen_pipe(write)
        assert size == fcntl.fcntl(write, fcntl.F_GETPIPE_SZ)
        assert size >= min(PIPE_BYTES, _max_pipe_bytes())
    finally:
        os.close(read)
        os.close(write)


@linux_only
def test_a_wider_pipe_is_not_shrunk() -> None:
    read, write = os.pipe()
    try:
        wide = fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        assert widen_pipe(write, 4096) == wide == fcntl.fcntl(write, fcntl.F_GETPIPE_SZ)
    finally:
        os.close(read)
        os.close(write)


def test_a_regular_file_is_left_alone() -> None:
    with tempfile.TemporaryFile() as f:
        assert widen_pipe(f.fileno()) == 0


def test_a_closed_descriptor_is_not_an_error() -> None:
    read, write = os.pipe()
    os.close(read)
    os.close(write)
    assert widen_pipe(write) == 0

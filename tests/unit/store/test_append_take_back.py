"""A failed append is taken back only when nobody wrote after it (``store/files.py``).

Real files, real descriptors; the fault is the ``PI_SESSIOND_FAIL_WRITE``
failpoint (half the bytes, then the error, as a full disk does) or, for the
take-back rule itself, a direct call with a real second writer.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from pi_sessiond.store import failpoints, files
from pi_sessiond.store.errors import InterleavedWriteError, WriteFailedError

OURS = b'{"type":"message","id":"ours"}\n' * 4
THEIRS = b'{"type":"message","id":"theirs"}\n'


def test_a_half_written_append_is_cut_back_to_where_it_started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session"}\n')
    monkeypatch.setattr(failpoints, "FAIL_WRITE", "ENOSPC")
    with pytest.raises(WriteFailedError) as caught:
        files.append_bytes(path, OURS)
    assert caught.value.data == {"path": str(path), "cause": "ENOSPC"}
    assert path.read_bytes() == b'{"type":"session"}\n'


def test_lines_another_writer_added_before_ours_are_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")

    def fault() -> OSError:  # another program appends just before our bytes land
        with open(path, "ab") as other:
            other.write(THEIRS)
        return OSError(errno.ENOSPC, "full")

    monkeypatch.setattr(failpoints, "write_fault", fault)
    with pytest.raises(WriteFailedError):
        files.append_bytes(path, OURS)
    assert path.read_bytes() == THEIRS


def test_our_partial_bytes_stay_when_another_writer_appended_after_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        written = os.write(fd, OURS[:20])
        with open(path, "ab") as other:
            other.write(THEIRS)
        with pytest.raises(InterleavedWriteError) as caught:
            files._take_back(fd, path, 0, written, OSError(errno.EFBIG, "too big"))
    finally:
        os.close(fd)
    assert caught.value.reason == "conflict" and caught.value.data == {"path": str(path), "cause": "EFBIG"}
    assert path.read_bytes() == OURS[:20] + THEIRS  # cutting ours would cut theirs


def test_a_refused_rewrite_keeps_the_original_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"old\n")
    monkeypatch.setattr(failpoints, "FAIL_WRITE", "EIO")
    with pytest.raises(WriteFailedError, match=r"\(EIO\)"):
        files.atomic_write(path, b"new\n" * 100)
    assert path.read_bytes() == b"old\n" and sorted(tmp_path.iterdir()) == [path]


def test_the_writability_probe_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x\n")
    files.probe_writable(path, rewrite=True)
    files.probe_writable(tmp_path / "new" / "deeper" / "n.jsonl", rewrite=False)
    assert sorted(tmp_path.iterdir()) == [path] and path.read_bytes() == b"x\n"


def test_an_append_that_expects_another_size_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(THEIRS)
    assert files.append_bytes(path, OURS, expect_size=0) is None
    assert path.read_bytes() == THEIRS


def test_an_append_at_the_expected_size_lands_there(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(THEIRS)
    assert files.append_bytes(path, OURS, expect_size=len(THEIRS)) == len(THEIRS)
    assert path.read_bytes() == THEIRS + OURS


@pytest.mark.skipif(os.uname().sysname != "Linux", reason="the GIL-holding calls are bound on Linux here")
def test_the_size_check_and_the_write_keep_the_gil_on_linux() -> None:
    """Else another thread of ours may run between them, and a live Pi's line land in that gap."""
    assert files._held_calls() is not None


def test_without_the_gil_holding_calls_the_same_append_is_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files, "_held_calls", lambda: None)
    path = tmp_path / "s.jsonl"
    path.write_bytes(THEIRS)
    assert files.append_bytes(path, OURS, expect_size=0) is None
    assert files.append_bytes(path, OURS, expect_size=len(THEIRS)) == len(THEIRS)
    assert path.read_bytes() == THEIRS + OURS


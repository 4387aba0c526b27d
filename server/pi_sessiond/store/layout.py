"""Pi's on-disk layout: agent dir, per-cwd session dirs, file names, ids."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Container
from datetime import UTC, datetime, timedelta
from pathlib import Path

_CWD_LEADING = re.compile(r"^[/\\]")
_CWD_SEPARATORS = re.compile(r"[/\\:]")


def agent_dir() -> Path:
    """``$PI_CODING_AGENT_DIR`` (``~`` expanded) or ``~/.pi/agent``."""
    env = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(env).expanduser() if env else Path.home() / ".pi" / "agent"


def sessions_root() -> Path:
    """Where Pi keeps the per-cwd session directories."""
    return agent_dir() / "sessions"


def runtime_dir() -> Path:
    """``$XDG_RUNTIME_DIR/pi-sessiond``, else ``/tmp/pi-sessiond-<uid>`` (the shared, fixed place)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base:
        return Path(base) / "pi-sessiond"
    return Path("/tmp") / f"pi-sessiond-{os.getuid()}"


def cache_root() -> Path:
    """``$XDG_CACHE_HOME/pi-sessiond`` (``~/.cache`` when unset or not absolute): what a daemon keeps across runs."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "pi-sessiond"


def private_dir(directory: Path, *, create: bool) -> bool:
    """Whether ``directory`` is a real folder of ours that only we can enter (made 0700 when ``create``).

    A symlink, a folder of another user or one that others may enter is not: nothing is read from or
    written to it.
    """
    if create:
        directory.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
    try:
        st = os.lstat(directory)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & 0o077 == 0


def cwd_dir_name(cwd: str) -> str:
    """``/Users/a/proj`` -> ``--Users-a-proj--`` (one leading separator dropped)."""
    return f"--{_CWD_SEPARATORS.sub('-', _CWD_LEADING.sub('', cwd))}--"


def session_dir(cwd: str, root: Path | None = None) -> Path:
    """The directory holding the sessions of ``cwd``."""
    return (root if root is not None else sessions_root()) / cwd_dir_name(cwd)


def now_iso() -> str:
    """``new Date().toISOString()``: UTC, milliseconds, ``Z``."""
    now = datetime.now(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def iso_ms(timestamp: str) -> int:
    """``new Date(timestamp).getTime()`` for an ISO time as :func:`now_iso` writes it."""
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (moment - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


def session_file_name(timestamp: str, session_id: str) -> str:
    """``<timestamp with : and . as ->_<id>.jsonl``."""
    return f"{timestamp.replace(':', '-').replace('.', '-')}_{session_id}.jsonl"


def new_session_id() -> str:
    """A UUID v7 string (time-ordered), as Pi 0.73.1 makes session ids."""
    import secrets  # here, with uuid: reading the settings (a server's start) needs neither
    import uuid

    ms = time.time_ns() // 1_000_000
    value = (ms & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= secrets.randbits(12) << 64
    value |= 0b10 << 62
    value |= secrets.randbits(62)
    return str(uuid.UUID(int=value))


def new_entry_id(taken: Container[str]) -> str:
    """8 hex chars, unique among ``taken`` (100 tries, then a full UUID)."""
    import uuid

    for _ in range(100):
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate
    return str(uuid.uuid4())

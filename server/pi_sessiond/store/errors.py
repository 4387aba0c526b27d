"""The store's failures: subclasses of the wire classes in :mod:`pi_sessiond.errors`.

Each one already carries the ``reason`` the client sees, so nothing above the
store translates them.
"""

from __future__ import annotations

import errno

from pi_sessiond.errors import Conflict, InvalidParams, Locked, NotASession, TooLarge, UnknownEntry, WriteFailed


class UnknownEntryError(UnknownEntry, KeyError):
    """An entry id that is not in the session (``data.entryId``)."""

    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found", data={"entryId": entry_id})
        self.entry_id = entry_id


class ReadOnlySessionError(Locked):
    """The file cannot be written safely (e.g. it has no session header): ``locked``."""

    def __init__(self, why: str) -> None:
        super().__init__(f"the session cannot be written: {why}")


class InvalidEntryError(InvalidParams, ValueError):
    """An entry to append is not a Pi entry: ``invalidParams`` on ``entries``."""

    def __init__(self, problem: str) -> None:
        super().__init__(f"entries: {problem}")


class NotASessionError(NotASession):
    """The file is not a Pi session: non-empty without a session header, binary, or a directory.

    Nothing is written; the message is Pi 1.6.0's reason (``Session file is not
    a valid pi session: <path>``), ``data.path`` the file.
    """

    def __init__(self, path: object, why: str | None = None) -> None:
        super().__init__(why or f"Session file is not a valid pi session: {path}", data={"path": str(path)})
        self.path = str(path)


class TooLargeError(TooLarge):
    """A session file above the limits (``daemon.maxSessionBytes``, the line limit): nothing is read.

    ``data``: ``path``, ``size`` (what was found) and ``limit`` (which limit, in words).
    """

    def __init__(self, path: object, size: str, limit: str) -> None:
        super().__init__(f"{path} is too large to open ({size}; {limit})",
                         data={"path": str(path), "size": size, "limit": limit})


class WriteFailedError(WriteFailed):
    """The OS refused a write to ``path``: ``data`` is ``{path, cause}``, ``cause`` the errno name (``ENOSPC``…).

    Raised only after the file was put back as it was (see ``store/files.py``).
    """

    def __init__(self, path: object, exc: OSError) -> None:
        cause = errno_name(exc)
        detail = exc.strerror or str(exc)
        super().__init__(f"cannot write {path}: {detail} ({cause})", data={"path": str(path), "cause": cause})
        self.path = str(path)
        self.cause = cause


def errno_name(exc: OSError) -> str:
    """The symbolic errno of ``exc`` (``ENOSPC``, ``EACCES``…); ``EIO`` when it has none."""
    return errno.errorcode.get(exc.errno or 0, "EIO")


class InterleavedWriteError(Conflict):
    """A write failed after part of it reached the file *and* another program appended meanwhile.

    Our bytes cannot be taken back without cutting theirs, so the file is left
    as it is (its lines are folded in; a torn line of ours is skipped like any
    torn line) and the request answers ``conflict``. ``data``: ``path``, ``cause``.
    """

    def __init__(self, path: object, exc: OSError) -> None:
        cause = errno_name(exc)
        super().__init__(f"cannot write {path} ({cause}), and another program appended to it meanwhile; "
                         "nothing of this request was kept", data={"path": str(path), "cause": cause})

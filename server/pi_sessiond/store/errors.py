"""The store's failures: subclasses of the wire classes in :mod:`pi_sessiond.errors`.

Each one already carries the ``reason`` the client sees, so nothing above the
store translates them.
"""

from __future__ import annotations

from pi_sessiond.errors import InvalidParams, Locked, NotASession, UnknownEntry


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

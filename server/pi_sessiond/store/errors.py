"""The store's exception tree (translated to JSON-RPC codes at the handler edge)."""

from __future__ import annotations


class StoreError(Exception):
    """Base of every session-store failure."""

    reason = "storeError"


class UnknownEntryError(StoreError, KeyError):
    """An entry id that is not in the session."""

    reason = "unknownEntry"

    def __init__(self, entry_id: str | None) -> None:
        super().__init__(f"Entry {entry_id} not found")
        self.entry_id = entry_id

    def __str__(self) -> str:
        return str(self.args[0])


class ReadOnlySessionError(StoreError):
    """The file cannot be written safely (e.g. it has no session header)."""

    reason = "readOnly"


class InvalidEntryError(StoreError, ValueError):
    """An entry to append is not a Pi entry."""

    reason = "invalidEntry"


class NotASessionError(StoreError):
    """The file is not a Pi session: non-empty without a session header, binary, or a directory.

    Nothing is written; the message is Pi 1.6.0's reason (``Session file is not
    a valid pi session: <path>``).
    """

    reason = "notASession"

    def __init__(self, path: object, why: str | None = None) -> None:
        super().__init__(why or f"Session file is not a valid pi session: {path}")
        self.path = str(path)

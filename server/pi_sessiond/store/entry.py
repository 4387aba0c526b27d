"""One session entry as the store holds it.

Invariant: ``data`` is the entry exactly as Pi writes it (camelCase keys, Pi's
key order, unknown fields kept). The skeleton fields (``id``, ``parent_id``,
``type``, ``timestamp``, and a message's ``role`` when it is the message's
first key, as Pi writes it) are read from the line's start; the full JSON
object is parsed lazily from the file's bytes on first access. Opening a file
makes no ``Entry`` for a standard message line at all (``scan.py``: its id and
parent wait in ``table.EntryTable`` columns until someone asks for the entry),
so a context only pays for the entries it contains.
``raw`` is the original line while the entry is unchanged, so an untouched
line is written back byte-identical.
"""

from __future__ import annotations

import sys

from pi_protocol.base import JsonDict
from pi_sessiond.jsonio.jsontext import loads


class Entry:
    """A non-header line of a session file."""

    __slots__ = ("_data", "_end", "_role", "_src", "_start", "id", "line", "parent_id", "timestamp", "type")

    def __init__(
        self,
        id: str,
        parent_id: str | None,
        type: str,
        timestamp: str,
        data: JsonDict | None = None,
        src: bytes | None = None,
        start: int = 0,
        end: int = 0,
        line: int = 0,
        role: str | None = None,
    ) -> None:
        self.id = id
        self.parent_id = parent_id
        self.type = type
        self.timestamp = timestamp
        self._data = data
        self._src = src
        self._start = start
        self._end = end
        self.line = line
        self._role = role  # read with the skeleton (the message's first key), until data is parsed

    @classmethod
    def from_data(cls, data: JsonDict, *, line: int = 0) -> Entry:
        """Wrap a parsed Pi entry object."""
        parent = data.get("parentId")
        ts = data.get("timestamp")
        return cls(
            str(data.get("id")),
            parent if isinstance(parent, str) else None,
            str(data.get("type")),
            ts if isinstance(ts, str) else "",
            data=data,
            line=line,
        )

    @property
    def data(self) -> JsonDict:
        """The full entry object, parsed on first use.

        A lazily read line whose body turns out not to be JSON (its skeleton was)
        becomes its skeleton alone: a ``message`` entry without a message, which
        contributes nothing to a context (docs/deviations.md).
        """
        data = self._data  # read once: :meth:`shed` may drop it meanwhile (another thread)
        if data is None:
            raw = self.raw
            if raw is None and self._data is not None:  # parsed by another thread, its line let go
                return self._data
            try:
                parsed = loads(raw or b"{}")
            except ValueError:
                parsed = {"type": self.type, "id": self.id, "parentId": self.parent_id, "timestamp": self.timestamp}
                self._role = None
            self._data = data = parsed if isinstance(parsed, dict) else {}
        return data

    @property
    def raw(self) -> bytes | None:
        """The original line (no newline) while the entry is unchanged, else ``None``."""
        if self._src is None:
            return None
        return self._src[self._start : self._end]

    def shed(self) -> bool:
        """Drop the parsed body of an unchanged entry (:attr:`data` parses its line again when asked);
        whether it was unchanged."""
        if self._src is None:
            return False
        self._data = None
        return True

    def detach(self) -> None:
        """Forget the source line (the entry was changed or the buffer is going away)."""
        self.data  # noqa: B018 - parse before dropping the source
        self._src = None

    @property
    def message(self) -> JsonDict | None:
        """The stored message of a ``message`` entry, else ``None``."""
        if self.type != "message":
            return None
        msg = self.data.get("message")
        return msg if isinstance(msg, dict) else None

    @property
    def role(self) -> str | None:
        """The role of a ``message`` entry's message, else ``None`` (no parse when the skeleton had it)."""
        if self._role is not None and self._data is None:
            return self._role
        msg = self.message
        role = msg.get("role") if msg is not None else None
        return role if isinstance(role, str) else None

    def __repr__(self) -> str:
        return f"Entry({self.type}, {self.id}, parent={self.parent_id})"


class OwnLineEntry(Entry):
    """An entry that keeps the block its line was read from only until the line is parsed
    (``store/detached.py``).

    For a session that is only appended to: its lines are never copied again, so
    once parsed an entry lets its block go (:attr:`raw` is then ``None``); its id,
    parent and timestamp are the strings the line's start gave (not a second
    copy), and the values that repeat on every line (:data:`SHARED_FIELDS`, the
    content blocks' ``type``) are one string each. The values are unchanged.
    """

    __slots__ = ()

    @classmethod
    def owning(cls, entry: Entry) -> OwnLineEntry:
        """``entry`` itself, letting go of its buffer once its line is parsed (now, if it was)."""
        entry.__class__ = cls
        assert isinstance(entry, OwnLineEntry)
        if entry._data is not None:
            entry.data  # noqa: B018 - lets the buffer go
        return entry

    @property
    def data(self) -> JsonDict:
        data = self._data
        if data is None or self._src is not None:
            data = Entry.data.fget(self)  # type: ignore[attr-defined]
            self._share(data)
            self._src = None
        return data

    def _share(self, data: JsonDict) -> None:
        if data.get("id") == self.id:  # the tree's index keeps the line start's strings: those stay
            data["id"] = self.id
        if self.parent_id is not None and data.get("parentId") == self.parent_id:
            data["parentId"] = self.parent_id
        if data.get("timestamp") == self.timestamp:
            data["timestamp"] = self.timestamp
        message = data.get("message")
        if not isinstance(message, dict):
            return
        for key in SHARED_FIELDS:
            value = message.get(key)
            if isinstance(value, str) and len(value) <= 64:
                message[key] = sys.intern(value)
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            kind = block.get("type") if isinstance(block, dict) else None
            if isinstance(kind, str) and len(kind) <= 64:
                block["type"] = sys.intern(kind)


SHARED_FIELDS = ("role", "api", "provider", "model", "stopReason", "toolName")
"""A message's fields whose few values repeat on every line."""

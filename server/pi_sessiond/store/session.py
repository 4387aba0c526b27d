"""One session: its file, its tree and the write rules.

Write rules (PROTOCOL.md "Session data", reference §1.8):
- Loading never writes. A migrated (v1/v2) file is rewritten once as v3,
  atomically, right before the first new entry is appended.
- A new session's file is created when its first assistant message arrives;
  then every appended entry is on disk (one write, fsync) before we return.
- A file whose last line is torn (no trailing newline) gets a newline in the
  same write as the next entry; nothing is ever truncated.
- A file without a session header is read-only: we never overwrite it (Pi
  0.73.1 would replace it with a fresh header; deliberate fix).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_sessiond.store.context import UNSET, SessionContext, _Unset, build_session_context
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.errors import InvalidEntryError, ReadOnlySessionError, UnknownEntryError
from pi_sessiond.store.files import append_bytes, atomic_write, gc_paused
from pi_sessiond.store.jsontext import dumps
from pi_sessiond.store.layout import new_entry_id, new_session_id, now_iso, session_file_name
from pi_sessiond.store.livecontext import LiveContext
from pi_sessiond.store.migrate import CURRENT_VERSION, header_version, migrate
from pi_sessiond.store.reader import Warning, read_session_file
from pi_sessiond.store.tree import SessionTree

JsonDict = dict[str, Any]
_OWN_FIELDS_FIRST = frozenset({"custom", "custom_message"})


class Session:
    """A session tree bound to (at most) one file."""

    def __init__(self, header: JsonDict, tree: SessionTree, path: Path | None) -> None:
        self.header = header
        self.tree = tree
        self.path = path
        self.warnings: list[Warning] = []
        self.fsync = True
        self.read_only_reason: str | None = None
        self.source_version = CURRENT_VERSION  # the format version the file had on disk
        self._on_disk = False
        self._needs_rewrite = False
        self._needs_newline = False
        self._live = LiveContext(tree)

    # ----------------------------------------------------------------- create
    @classmethod
    def open(cls, path: Path) -> Session:
        """Load ``path`` (migrating in memory); raises ``OSError`` if unreadable."""
        with gc_paused():
            result = read_session_file(path)
            missing_header = result.header is None
            version = header_version(result.header)
            migrated = migrate(result) if not missing_header else False
            header = result.header if result.header is not None else _placeholder_header()
            session = cls(header, SessionTree(result.entries), path)
        session.warnings = list(result.warnings)
        session._on_disk = result.size > 0
        session._needs_rewrite = migrated
        session._needs_newline = result.size > 0 and not result.ends_with_newline
        if missing_header:
            session.read_only_reason = "the file has no session header; it is opened read-only"
        session.source_version = version
        return session

    @classmethod
    def create(
        cls,
        cwd: str,
        directory: Path | None,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
    ) -> Session:
        """A new, empty session; its file appears with the first assistant message."""
        sid = session_id or new_session_id()
        timestamp = now_iso()
        header: JsonDict = {"type": "session", "version": CURRENT_VERSION, "id": sid}
        header.update(timestamp=timestamp, cwd=cwd)
        if parent_session is not None:
            header["parentSession"] = parent_session
        path = directory / session_file_name(timestamp, sid) if directory is not None else None
        return cls(header, SessionTree(), path)

    # ------------------------------------------------------------------ read
    @property
    def id(self) -> str:
        return str(self.header.get("id", ""))

    @property
    def cwd(self) -> str:
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def leaf_id(self) -> str | None:
        return self.tree.leaf_id

    @property
    def entries(self) -> list[Entry]:
        return self.tree.entries

    @property
    def on_disk(self) -> bool:
        """Whether the file exists with our header in it."""
        return self._on_disk

    def entry(self, entry_id: str) -> Entry:
        """The entry ``entry_id``; raises :class:`UnknownEntryError`."""
        found = self.tree.get(entry_id)
        if found is None:
            raise UnknownEntryError(entry_id)
        return found

    def path_to(self, entry_id: str | None = None) -> list[Entry]:
        """Root -> entry (default: the leaf)."""
        return self.tree.path(entry_id)

    def context(self, leaf_id: str | _Unset | None = UNSET) -> SessionContext:
        """Pi's context for ``leaf_id`` (default: the current leaf, kept incrementally)."""
        if isinstance(leaf_id, _Unset) or leaf_id == self.tree.leaf_id:
            if self.tree.leaf_id is None:
                return build_session_context(self.entries, None, self.tree.by_id)
            return self._live.get()
        return build_session_context(self.entries, leaf_id, self.tree.by_id)

    def replace_tree(self, tree: SessionTree) -> None:
        """Swap in another tree (used when building a session from a path)."""
        self.tree = tree
        self._live = LiveContext(tree)

    def write_now(self) -> None:
        """Create the file now if the entries warrant it (an assistant message)."""
        self._persist([])

    # ----------------------------------------------------------------- write
    def set_leaf(self, entry_id: str | None) -> None:
        """Move the leaf (nothing is written: Pi never stores the leaf)."""
        if entry_id is not None:
            self.entry(entry_id)
        self.tree.leaf_id = entry_id

    def append(self, new_entries: list[JsonDict]) -> list[Entry]:
        """Append Pi entries (without id/parentId/timestamp) under the leaf, in order."""
        if self.read_only_reason:
            raise ReadOnlySessionError(self.read_only_reason)
        for data in new_entries:
            if not isinstance(data.get("type"), str) or data.get("type") == "session":
                raise InvalidEntryError("an entry needs a string 'type' other than 'session'")
        built: list[Entry] = []
        lines: list[bytes] = []
        for data in new_entries:
            entry = self._build(data)
            built.append(entry)
            self.tree.add(entry)
            self._live.on_append(entry)
            lines.append(dumps(entry.data) + b"\n")
        self._persist(lines)
        return built

    def _build(self, data: JsonDict) -> Entry:
        kind = str(data["type"])
        base = {
            "id": new_entry_id(self.tree.by_id),
            "parentId": self.tree.leaf_id,
            "timestamp": now_iso(),
        }
        rest = {k: v for k, v in data.items() if k not in ("type", "id", "parentId", "timestamp")}
        full = {"type": kind, **rest, **base} if kind in _OWN_FIELDS_FIRST else {"type": kind, **base, **rest}
        return Entry.from_data(full)

    def _persist(self, lines: list[bytes]) -> None:
        if self.path is None:
            return
        if not self._on_disk:
            if not any(e.role == "assistant" for e in self.entries):
                return
            self._write_everything()
            return
        if self._needs_rewrite:
            self._write_everything()
            return
        prefix = b"\n" if self._needs_newline else b""
        append_bytes(self.path, prefix + b"".join(lines), fsync=self.fsync)
        self._needs_newline = False

    def _write_everything(self) -> None:
        assert self.path is not None
        atomic_write(self.path, self.render(), fsync=self.fsync)
        self._on_disk = True
        self._needs_rewrite = False
        self._needs_newline = False

    def render(self) -> bytes:
        """The whole file as it should be on disk now."""
        parts = [dumps(self.header) + b"\n"]
        for entry in self.entries:
            raw = entry.raw
            parts.append((raw if raw is not None else dumps(entry.data)) + b"\n")
        return b"".join(parts)


def _placeholder_header() -> JsonDict:
    return {"type": "session", "version": CURRENT_VERSION, "id": new_session_id(), "cwd": ""}

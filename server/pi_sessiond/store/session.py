"""One session: its file, its tree and the write rules (the file's own state and writes: ``sessionfile.py``).

Write rules (a file Pi wrote opens here, and a file written here opens in Pi):
- Loading never writes the session file (a large one's open index goes to the cache,
  ``store/openindex.py``, saved by the caller off the request path). A migrated (v1/v2)
  file is rewritten once as v3, atomically, right before the first new entry is appended.
- A new session's file is created when its first user or assistant message
  arrives (Pi 1.6.0); then every appended entry is on disk (one write, fsync)
  before we return. A 0-byte file opens as a new, empty session.
- A file whose last line is torn (no trailing newline) gets a newline in the
  same write as the next entry, never on open (Pi 1.6.0 appends it on open;
  deliberate fix, ``test_fix_no_write_on_open``); nothing is ever truncated.
- A non-empty file without a session header (binary files included), a
  directory, a FIFO, a socket or a device is refused with
  :class:`NotASessionError` and left untouched (``store/pathcheck.py``, before
  a byte is read); a file above ``max_bytes`` or the line limit is
  :class:`TooLargeError`.
- Other writers (the lock, offsets, foreign appends: ``guard.py``): lines
  another program appended are folded in (:meth:`Session.refresh`, and before
  each of our writes), never overwritten; a torn last line of theirs is waited
  for (``TORN_LINE_WAIT``), never mended; the leaf follows folded-in entries
  that continue its branch (Pi's rule on load). A write finds the file at the
  size we accounted for, or folds in and builds its entries again on the newest leaf.
- An append changes memory only after its bytes are on disk: a failed write
  leaves the session and the file as they were and raises
  :class:`WriteFailedError` (``{path, cause}``); if another program appended
  during our failed write, their lines are folded in and the answer is
  ``conflict`` (``store/files.py``). :meth:`Session.check_writable` tells,
  without writing, whether a write could be made now.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from pi_protocol.base import JsonDict
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.store.building import Completer, build_entries, new_header, placeholder_header, render_file
from pi_sessiond.store.context import UNSET, SessionContext, _Unset, build_session_context, resolve_leaf
from pi_sessiond.store.detached import read_in_blocks
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.errors import (
    InterleavedWriteError,
    InvalidEntryError,
    NotASessionError,
    ReadOnlySessionError,
    UnknownEntryError,
)
from pi_sessiond.store.files import gc_paused
from pi_sessiond.store.guard import ChangedUnderneathError
from pi_sessiond.store.layout import new_session_id, session_file_name
from pi_sessiond.store.livecontext import LiveContext
from pi_sessiond.store.migrate import CURRENT_VERSION, header_version, migrate
from pi_sessiond.store.notsession import not_a_session_message
from pi_sessiond.store.openindex import read_session, save
from pi_sessiond.store.pathcheck import DEFAULT_MAX_SESSION_BYTES, check_line_count, check_session_file
from pi_sessiond.store.projection import Projection, project_path
from pi_sessiond.store.reader import Warning, parse_session_bytes
from pi_sessiond.store.scan import ScanColumns
from pi_sessiond.store.sessionfile import SessionFile
from pi_sessiond.store.table import EntryTable
from pi_sessiond.store.tree import SessionTree, timestamp_ms

_CONVERSATION_ROLES = frozenset({"user", "assistant"})  # a new file is created at the first of these
TORN_LINE_WAIT = 2.0  # seconds a write waits for another writer to finish its last line
WRITE_ATTEMPTS = 20  # times a write re-folds and rebuilds when another writer keeps appending


class Session:
    """A session tree bound to (at most) one file."""

    def __init__(self, header: JsonDict, tree: SessionTree, path: Path | None) -> None:
        self.header = header
        self.tree = tree
        self._file = SessionFile(path)
        self.warnings: list[Warning] = []
        self.read_only_reason: str | None = None
        self._live = LiveContext(tree)
        self._kept: list[tuple[Entry | None, bytes]] = []  # too-deep lines, copied as they are on a rewrite
        self.source_version = CURRENT_VERSION  # the format version the file had on disk
        self.pending_index: tuple[Path, os.stat_result, ScanColumns] | None = None
        self.lock = threading.RLock()
        """Held by :meth:`append` and :meth:`set_leaf`, and by readers in worker threads (``rpc/offload.py``)."""

    # ----------------------------------------------------------------- create
    @classmethod
    def open(
        cls, path: Path, *, max_bytes: int = DEFAULT_MAX_SESSION_BYTES, index_dir: Path | None = None,
        in_blocks: bool = False,
    ) -> Session:
        """Load ``path`` (migrating in memory); raises ``OSError`` if unreadable.

        ``index_dir``: the open-index cache (``store/openindex.py``): a valid
        index there is used, and a large file scanned in full leaves
        :attr:`pending_index` for the caller to save off the request path.
        ``in_blocks``: a v3 file is read a block at a time, for a process that only appends
        (``store/detached.py``).

        Raises :class:`NotASessionError` for anything but a regular file (a
        directory, FIFO, device, socket; checked before reading) and for a
        non-empty file without a session header; :class:`TooLargeError` above
        ``max_bytes`` or the line limit (``store/pathcheck.py``).
        """
        check_session_file(path, max_bytes)
        with gc_paused():
            blocks = read_in_blocks(path) if in_blocks else None
            result, columns, st = (blocks[0], None, blocks[1]) if blocks else read_session(path, index_dir)
            check_line_count(path, result.line_count)
            if result.header is None and result.size > 0:
                raise NotASessionError(path, not_a_session_message(path))
            missing_header = result.header is None
            version = header_version(result.header)
            migrated = migrate(result) if not missing_header else False
            header = result.header if result.header is not None else placeholder_header()
            session = cls(header, SessionTree(result.entries), path)
        session.warnings = list(result.warnings)
        session._kept = result.kept
        if "\0" in session.cwd:
            session.warnings.append(Warning(result.header_line, "the header's cwd holds a NUL byte: no project layer"))
        newest = timestamp_ms(result.entries[-1].timestamp) if result.entries else float("nan")
        session._file.opened(result.size, ends_with_newline=result.ends_with_newline, lines=result.line_count,
                             migrated=migrated, newest_ns=int(newest * 1e6) if newest == newest else None)
        session.source_version = version
        if columns is not None and index_dir is not None:
            session.pending_index = (index_dir, st, columns)
        return session

    def save_index(self) -> bool:
        """Save the open index :meth:`open` left pending (slow: call it off the request path); whether saved."""
        pending, self.pending_index = self.pending_index, None
        if pending is None or self.path is None:
            return False
        directory, st, columns = pending
        return save(self.path, st, columns, directory)

    @classmethod
    def create(
        cls,
        cwd: str,
        directory: Path | None,
        *,
        session_id: str | None = None,
        parent_session: str | None = None,
    ) -> Session:
        """A new, empty session; its file appears with the first user or assistant message."""
        header = new_header(cwd, session_id or new_session_id(), parent_session)
        path = directory / session_file_name(header["timestamp"], header["id"]) if directory is not None else None
        return cls(header, SessionTree(), path)

    # ------------------------------------------------------------------ read
    @property
    def path(self) -> Path | None:
        """The session's file; ``None``: in memory only (appends write nothing)."""
        return self._file.path

    @path.setter
    def path(self, path: Path | None) -> None:
        self._file.path = path

    @property
    def fsync(self) -> bool:
        """Whether every write is fsynced before it counts as written."""
        return self._file.fsync

    @fsync.setter
    def fsync(self, fsync: bool) -> None:
        self._file.fsync = fsync

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
    def entries(self) -> EntryTable:
        return self.tree.entries

    @property
    def on_disk(self) -> bool:
        """Whether the file exists with our header in it."""
        return self._file.on_disk

    def entry(self, entry_id: str) -> Entry:
        """The entry ``entry_id``; raises :class:`UnknownEntryError`."""
        found = self.tree.get(entry_id)
        if found is None:
            raise UnknownEntryError(entry_id)
        return found

    def path_to(self, entry_id: str | None = None) -> list[Entry]:
        """Root -> entry (default: the leaf, whose path is kept up to date by appends); a new list."""
        if entry_id is None or entry_id == self.tree.leaf_id:
            return self._live.path()
        return self.tree.path(entry_id)

    def context(self, leaf_id: str | _Unset | None = UNSET) -> SessionContext:
        """Pi's context for ``leaf_id`` (default: the current leaf, kept incrementally)."""
        if isinstance(leaf_id, _Unset) or leaf_id == self.tree.leaf_id:
            if self.tree.leaf_id is None:
                return build_session_context(self.entries, None, self.tree.by_id)
            return self._live.get()
        return build_session_context(self.entries, leaf_id, self.tree.by_id)

    def projection(self, leaf_id: str | _Unset | None = UNSET) -> Projection:
        """Pi 1.6.0's projection of ``leaf_id`` (default: the current leaf, kept incrementally).

        The context is ``projection.messages``; compaction preparation, token
        estimates and branch summaries work on ``projection.entries``.
        """
        if isinstance(leaf_id, _Unset) or leaf_id == self.tree.leaf_id:
            if self.tree.leaf_id is None:
                return Projection([])
            return self._live.projection()
        leaf = resolve_leaf(self.entries, leaf_id, self.tree.by_id)
        return project_path(self.tree.path_view(leaf.id)) if leaf is not None else Projection([])

    def replace_tree(self, tree: SessionTree) -> None:
        """Swap in another tree (used when building a session from a path)."""
        self.tree = tree
        self._live = LiveContext(tree)

    @property
    def last_foreign_append(self) -> float | None:
        """When another program last appended to the file (epoch seconds), as far as we saw; ``None``: never."""
        return self._file.last_foreign_append

    def refresh(self) -> bool:
        """Fold in the whole lines other programs appended (no lock needed); whether there were any.

        Raises :class:`ChangedUnderneathError` when the file shrank or was replaced.
        """
        if self._file.guard is None or not self._file.on_disk:
            return False
        with self.lock:
            before = len(self.tree)
            self._fold_new()
            return len(self.tree) != before

    @property
    def holds_lock(self) -> bool:
        """Whether this session holds its file's write lock now."""
        return self._file.locked

    def release_if_idle(self, idle_seconds: float) -> bool:
        """Drop the write lock after ``idle_seconds`` without a write (retaken before the next write)."""
        return self._file.release_if_idle(idle_seconds)

    def shed(self) -> None:
        """Drop what the file's bytes rebuild: the parsed entry bodies and the leaf's context; later reads
        give the same results, paying the parse again."""
        with self.lock:
            self._live = LiveContext(self.tree)
            self.tree.entries.shed()

    def write_now(self) -> None:
        """Create the file now if the entries warrant it (a user or assistant message)."""
        self._before_write()
        self._persist([], [])

    # ----------------------------------------------------------------- write
    def set_leaf(self, entry_id: str | None) -> None:
        """Move the leaf (nothing is written: Pi never stores the leaf)."""
        with self.lock:
            if entry_id is not None:
                self.entry(entry_id)
            self.tree.leaf_id = entry_id

    def append(
        self,
        new_entries: list[JsonDict],
        *,
        complete: Completer | None = None,
        verify: Callable[[], None] | None = None,
    ) -> list[Entry]:
        """Append Pi entries (without id/parentId/timestamp) under the leaf, in order.

        ``complete(position, data)``, when given, gets each entry (and its
        row's position in ``new_entries``) once its id, parentId and timestamp
        are assigned and returns the entry to write (fields that depend on them:
        a retain-none compaction's own id, its checkpoint's time; an entry's own
        id). It is called again for every row when another writer's lines land
        first and the entries are built once more.
        ``verify()``, when given, runs after other writers' lines were folded
        in (the leaf may have followed them) and before anything is built; it
        raises to write nothing (a compaction's leaf re-check).
        """
        if self.read_only_reason:
            raise ReadOnlySessionError(self.read_only_reason)
        for data in new_entries:
            if not isinstance(data.get("type"), str) or data.get("type") == "session":
                raise InvalidEntryError("an entry needs a string 'type' other than 'session'")
        with self.lock:
            return self._append(new_entries, complete, verify)

    def _append(
        self, new_entries: list[JsonDict], complete: Completer | None, verify: Callable[[], None] | None
    ) -> list[Entry]:
        for _ in range(WRITE_ATTEMPTS):
            self._before_write()
            if verify is not None:
                verify()
            built = build_entries(new_entries, self.tree.leaf_id, self.tree.by_id, complete)
            gap = self._persist([dumps(entry.data) + b"\n" for entry in built], built)
            if gap is not None:
                break
        else:
            raise ChangedUnderneathError(f"{self.path} keeps growing under another writer; nothing written, try again")
        for entry in built:
            self.tree.add(entry)
            self._live.on_append(entry)
        self._fold_in(gap)
        return built

    def close(self) -> None:
        """Release the write lock (the session may still be read)."""
        self._file.release()

    def discard(self) -> None:
        """Close a session whose file was never created, removing the lock file it made (a failed fork)."""
        self.close()
        self._file.forget_lock_file()

    def check_writable(self) -> None:
        """Raise what a write now would raise, writing nothing (call before paying a summarizer).

        :class:`ReadOnlySessionError` / ``LockedError`` (``locked``), or :class:`WriteFailedError` when
        the OS would refuse the write (a read-only mount, no permission, no such folder). A session
        already on disk takes its write lock here, as its first write would (any thread: under :attr:`lock`).
        """
        if self.read_only_reason:
            raise ReadOnlySessionError(self.read_only_reason)
        with self.lock:
            self._file.probe()

    def _before_write(self) -> None:
        if not self._file.lock_for_append():
            return
        deadline = time.monotonic() + TORN_LINE_WAIT
        while self._fold_new():  # another writer is in the middle of a line: wait for its newline
            if time.monotonic() > deadline:
                raise ChangedUnderneathError(
                    f"{self.path} ends in a line another program has not finished; nothing written, try again"
                )
            time.sleep(0.002)

    def _fold_new(self) -> bool:
        """Fold in the whole lines past our offset; whether a torn line follows them."""
        tail, torn = self._file.appended_by_others()
        self._fold_in(tail)
        return torn

    def _fold_in(self, tail: bytes) -> None:
        """Add the whole lines another program appended; the leaf follows them if they continue it."""
        if not tail:
            return
        if self._file.needs_rewrite:
            raise ChangedUnderneathError(f"{self.path} (an old-format file) was changed by another program; reopen it")
        result = parse_session_bytes(tail, header=self.header, first_line=self._file.lines + 1)
        leaf = self.tree.leaf_id
        for entry in result.entries:
            self.tree.add(entry)
        if result.entries and self.tree.descends(leaf, result.entries):
            for entry in result.entries:
                self._live.on_append(entry)
        else:
            self.tree.leaf_id = leaf
        self.warnings.extend(result.warnings)
        self._file.folded(tail)

    def _persist(self, lines: list[bytes], built: list[Entry]) -> bytes | None:
        """Write; ``None`` if the file grew since we folded in (nothing written), else the bytes another
        writer slipped in just before ours (usually ``b""``)."""
        if self.path is None:
            return b""
        if not self._file.on_disk:
            if any(e.role in _CONVERSATION_ROLES for e in (*self.entries, *built)):
                self._file.replace(self.render(built))
            return b""
        if self._file.needs_rewrite:
            self._file.replace(self.render(built))
            return b""
        try:
            return self._file.append(lines)
        except InterleavedWriteError:
            if self._file.guard is not None:  # their lines (and our torn one, skipped) join the tree now
                self._fold_new()
            raise

    def render(self, extra: list[Entry] | None = None) -> bytes:
        """The whole file as it should be on disk now (plus ``extra`` entries; see :func:`render_file`)."""
        return render_file(self.header, [*self.entries, *(extra or ())], self._kept)

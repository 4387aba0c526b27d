"""One request's scope: the open session and the settings in force for it, resolved once.

A request's entry point (a ``Daemon`` method, or the start of background work:
an auto-compaction, the live watch, the idle-lock sweep) makes the scope with
:func:`scope_of`; everything below takes it and never resolves settings again.
The compaction settings depend on the model of the session's leaf, so they are
resolved on first use (a session still read tail-first is not waited for by
requests that never need them).
"""

from __future__ import annotations

import functools

import attrs

from pi_protocol.settings import CompactionSettings, Settings
from pi_sessiond.errors import UnknownEntry
from pi_sessiond.service.sessions.registry import OpenSession
from pi_sessiond.service.settings_store import SettingsStore
from pi_sessiond.settings import compaction_for
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session


@attrs.frozen(slots=False)
class Scope:
    """The session a request works on and its settings (frozen for the request's life)."""

    opened: OpenSession
    settings: Settings

    @property
    def key(self) -> str:
        """The ``sessionId``."""
        return self.opened.key

    @property
    def session(self) -> Session:
        """The whole session (waits for a tail-first open's whole-file read)."""
        return self.opened.session

    @functools.cached_property
    def compaction(self) -> CompactionSettings:
        """``compaction.*`` resolved for the model of the session's leaf (``compaction.modelOverrides``)."""
        return compaction_for(self.settings.compaction, self.opened.session.context().model)

    def durable(self) -> Session:
        """The session, its appends fsynced as ``daemon.fsync`` says (``never``: not fsynced)."""
        session = self.opened.session
        session.fsync = self.settings.daemon.fsync != "never"
        return session


def scope_of(store: SettingsStore, opened: OpenSession) -> Scope:
    """The scope of ``opened``: its settings layers resolved now, with the project layer of its ``cwd``."""
    return Scope(opened, store.settings(opened.key, project_cwd(opened.peek())))


def project_cwd(session: Session) -> str | None:
    """The session's ``cwd`` for its project settings; ``None`` when it names no folder (empty, a NUL byte).

    A header's ``cwd`` is whatever the file says; one with a NUL byte cannot be
    a path, so no project layer applies (the open warned about it) and every
    method keeps working.
    """
    cwd = session.cwd
    return cwd if cwd and "\0" not in cwd else None


def require_entry(session: Session, entry_id: str, field: str = "entryId") -> Entry:
    """The entry ``entry_id``; :class:`UnknownEntry` names ``field`` otherwise."""
    entry = session.tree.get(entry_id)
    if entry is None:
        raise UnknownEntry(f"{field}: entry {entry_id!r} is not in the session", data={"entryId": entry_id})
    return entry

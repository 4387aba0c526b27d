"""Read-only views of an open session: SESSION, ``pi/getTree`` nodes, ``pi/getEntries``.

Tree order is Pi's: roots in file order, depth first, children by timestamp
(``SessionTree.walk``/``subtree``). A preview is the entry's text on one line,
at most :data:`PREVIEW_CHARS` characters, rendered by the entry-kind table
(``store/kinds.py``).
"""

from __future__ import annotations

from pi_protocol.base import JsonDict
from pi_protocol.results import SessionInfo, SessionSummary, TreeNode, TreeResult
from pi_protocol.session import SessionWarning
from pi_sessiond.errors import InvalidParams
from pi_sessiond.service.sessions.registry import OpenSession
from pi_sessiond.service.sessions.scope import require_entry
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import entry_text
from pi_sessiond.store.session import Session

PREVIEW_CHARS = 120


def session_info(opened: OpenSession) -> SessionInfo:
    """SESSION for an open session (while it loads: the tail's entries, no warnings, ``loading: true``)."""
    reading = opened.reading()
    session = reading.provisional if reading is not None else opened.session
    warnings = [] if reading is not None else session.warnings
    return SessionInfo(
        session_id=opened.key,
        path=str(session.path) if session.path is not None else None,
        header=dict(session.header),
        leaf_id=session.leaf_id,
        entry_count=len(session.entries),
        warnings=[SessionWarning(line=w.line, message=w.message) for w in warnings],
        loading=reading is not None,
    )


def tree(session: Session, root_id: str | None, offset: int, limit: int | None) -> TreeResult:
    """The nodes depth-first from ``root_id`` (default: every root), one page of them."""
    if offset < 0 or (limit is not None and limit < 0):
        raise InvalidParams("offset/limit: expected non-negative integers")
    t = session.tree
    if root_id is not None:
        require_entry(session, root_id, "rootId")
        order = t.subtree(root_id)
    else:
        order = [entry for entry, _ in t.walk()]
    end = len(order) if limit is None else offset + limit
    active = {e.id for e in t.iter_up(t.leaf_id)}
    nodes = [_node(session, e, e.id in active) for e in order[offset:end]]
    return TreeResult(leaf_id=t.leaf_id, nodes=nodes, total=len(order))


def _node(session: Session, entry: Entry, on_path: bool) -> TreeNode:
    t = session.tree
    return TreeNode(
        id=entry.id,
        parent_id=entry.parent_id,
        type=entry.type,
        role=entry.role,
        preview=preview(entry),
        label=t.labels.get(entry.id),
        timestamp=entry.timestamp,
        child_ids=[c.id for c in t.sorted_children(entry.id)],
        on_active_path=on_path,
    )


def preview(entry: Entry) -> str:
    """The entry's text on one line, at most 120 characters."""
    text = " ".join(entry_text(entry).split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def entries_by_ids(session: Session, ids: list[str]) -> list[JsonDict]:
    """Full entries for ``ids`` in the order asked; an unknown id is :class:`UnknownEntry`."""
    return [require_entry(session, i, "ids").data for i in ids]


ROOT = "root"  # Pi's name for "before the first entry" (a branch summary's fromId from the root)


def entries_since(session: Session, since: str) -> list[JsonDict]:
    """Full entries after ``since`` in file order (every entry for ``"root"``), as Pi's RPC ``get_entries``."""
    entries = session.entries
    if since == ROOT:
        return [e.data for e in entries]
    require_entry(session, since, "since")
    for index, entry in enumerate(entries):
        if entry.id == since:
            return [e.data for e in entries[index + 1:]]
    return []  # unreachable: require_entry found it


def path_segment(session: Session, from_id: str | None, to_id: str | None) -> list[JsonDict]:
    """Full entries of the path ``from_id`` .. ``to_id`` (default root .. leaf), in path order."""
    if to_id is not None:
        require_entry(session, to_id, "toId")
    path = session.path_to(to_id)
    if from_id is None:
        return [e.data for e in path]
    require_entry(session, from_id, "fromId")
    for index, entry in enumerate(path):
        if entry.id == from_id:
            return [e.data for e in path[index:]]
    raise InvalidParams(f"fromId: entry {from_id!r} is not on the path to {to_id or 'the leaf'}")


def session_summary(row: JsonDict) -> SessionSummary:
    """A ``pi/listSessions`` row from a listing's row."""
    return SessionSummary(
        session_id=str(row.get("sessionId") or ""),
        path=str(row.get("path") or ""),
        name=row.get("name"),
        cwd=str(row.get("cwd") or ""),
        modified=row.get("modified"),
        message_count=int(row.get("messageCount") or 0),
        first_message=str(row.get("firstMessage") or ""),
    )

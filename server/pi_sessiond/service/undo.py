"""``pi/undo``: take back a compaction or a branch summary while it is still the leaf.

Pi never stores the leaf: on reload it is the last entry of the file. So the
undo appends a ``custom`` entry (``customType`` :data:`UNDO_TYPE`, which adds
nothing to the context) under the undone entry's parent. Its path is the
path before the compaction or summary, so the daemon's context and Pi 1.6.0's
context on reload are the context from before it. The undone entry stays in
the file, on a side branch (``pi/navigateTree`` can return to it).

Auto-compaction would otherwise redo the compaction at the next answer: it is
suppressed until the context has grown by 10% of the window
(``OpenSession.auto_compaction_floor``). It moves the leaf, so the
``liveWriter`` guard applies (``force`` overrides).
"""

from __future__ import annotations

from pi_protocol import methods
from pi_protocol.params import UndoParams
from pi_protocol.results import SessionChanged, UndoResult
from pi_sessiond.errors import Conflict, InvalidParams
from pi_sessiond.service.interface import Notify
from pi_sessiond.service.jobs import JobManager
from pi_sessiond.service.models import context_window
from pi_sessiond.service.sessions import livewriter
from pi_sessiond.service.sessions.livewriter import check_live_writer
from pi_sessiond.service.sessions.scope import Scope, require_entry
from pi_sessiond.service.stats import projected_context_tokens

UNDO_TYPE = "pi-sessiond.undo"
UNDOABLE = ("compaction", "branch_summary")
GROWTH = 0.1


def undo(scope: Scope, params: UndoParams, notify: Notify, jobs: JobManager) -> UndoResult:
    """``pi/undo`` (see the module docstring); ``conflict`` when the entry is no longer the leaf."""
    session = scope.session
    entry = require_entry(session, params.entry_id)
    if entry.type not in UNDOABLE:
        raise InvalidParams(f"entryId: {entry.id} is a {entry.type} entry; only a compaction or a branch summary "
                            "can be undone", data={"entryId": entry.id})
    jobs.check(scope.key)
    held = livewriter.live_pi(session.path)
    if held is not None:  # Pi's extension API cannot move Pi's leaf outside a command
        raise livewriter.refuse(held, "undo it", "/tree (then pick the entry before the summary)")
    check_live_writer(scope, force=params.force, action="undo")
    if session.leaf_id != entry.id:
        raise Conflict(f"{entry.id} is no longer the leaf (the session moved on): undo it by navigating instead",
                       data={"entryId": entry.id, "leafId": session.leaf_id})
    settings = scope.settings
    scope.durable()
    row = {"type": "custom", "customType": UNDO_TYPE, "data": {"undid": entry.id, "entryType": entry.type},
           "id": "", "parentId": None, "timestamp": ""}
    session.set_leaf(entry.parent_id)
    try:
        written = session.append([row])[0]
    except BaseException:
        session.set_leaf(entry.id)
        raise
    tokens = projected_context_tokens(session, settings.tokenizer)
    window = context_window(settings, session.context().model)
    scope.opened.auto_compaction_floor = tokens + int(GROWTH * window)
    notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id, reason="undo"))
    return UndoResult(leaf_id=session.leaf_id, entry=dict(written.data))

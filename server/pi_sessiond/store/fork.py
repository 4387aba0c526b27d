"""Fork to a new file: Pi 1.6.0's ``createBranchedSession`` (``/fork``).

The new session holds the path root -> ``leaf_id`` without its label entries,
re-chained: each kept entry's ``parentId`` is the previous kept entry's id
(the first one's ``null``), so no entry is orphaned by a dropped label. A
compaction whose ``firstKeptEntryId`` names a dropped label of the path
points at the next kept entry instead (the compaction itself when the label
directly precedes it: retain-none); a retain-none compaction keeps its own
id. Then one fresh label entry per label that targets an entry on that path
(chained under the last path entry, original label timestamps kept). Key
order is kept. The file is written at once when the path has a user or
assistant message, else with the first of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.errors import UnknownEntryError
from pi_sessiond.store.layout import new_entry_id
from pi_sessiond.store.session import Session
from pi_sessiond.store.tree import SessionTree


def _with(entry: Entry, **changes: Any) -> Entry:
    """``entry`` with some fields replaced in place (key order kept); the same entry if none change."""
    data = entry.data
    if all(data.get(key) == value and key in data for key, value in changes.items()):
        return entry
    return Entry.from_data({**data, **changes})


def rechain(path: list[Entry]) -> list[Entry]:
    """The path without labels, parents re-chained and compaction boundaries moved off labels."""
    kept: list[Entry] = []
    replacement: dict[str, str] = {}
    pending: list[str] = []
    parent: str | None = None
    for entry in path:
        if entry.type == "label":
            pending.append(entry.id)
            continue
        replacement.update((label, entry.id) for label in pending)
        pending.clear()
        changes: dict[str, Any] = {"parentId": parent}
        first_kept = entry.data.get("firstKeptEntryId")
        if entry.type == "compaction" and isinstance(first_kept, str) and first_kept in replacement:
            changes["firstKeptEntryId"] = replacement[first_kept]
        kept.append(_with(entry, **changes))
        parent = entry.id
    return kept


def fork_session(source: Session, leaf_id: str, directory: Path | None = None) -> Session:
    """A new session (new id and file beside the source) holding the path to ``leaf_id``."""
    path = source.path_to(leaf_id)
    if not path:
        raise UnknownEntryError(leaf_id)
    kept = rechain(path)
    if directory is None and source.path is not None:
        directory = source.path.parent
    parent_file = str(source.path.resolve()) if source.path is not None else None
    fork = Session.create(source.cwd, directory, parent_session=parent_file)
    fork.fsync = source.fsync
    ids = {e.id for e in kept}
    parent = kept[-1].id if kept else None
    labels: list[Entry] = []
    for target, label in source.tree.labels.items():
        if target not in ids:
            continue
        entry_id = new_entry_id(ids)
        ids.add(entry_id)
        data = {"type": "label", "id": entry_id, "parentId": parent}
        data.update(timestamp=source.tree.label_timestamps.get(target), targetId=target, label=label)
        labels.append(Entry.from_data(data))
        parent = entry_id
    fork.replace_tree(SessionTree(kept + labels))
    try:
        fork.write_now()  # a refused write (writeFailed) leaves neither the file nor its lock file
    except BaseException:
        fork.discard()
        raise
    return fork

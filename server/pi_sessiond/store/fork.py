"""Fork to a new file: Pi 0.73.1's ``createBranchedSession`` (``/fork``).

The new session holds the path root -> ``leaf_id`` without its label entries,
then one fresh label entry per label that targets an entry on that path
(chained under the last path entry, original label timestamps kept). As in
0.73.1, entries whose parent was a dropped label keep that parent id (they
become orphan roots in the copy). The file is written at once when the path
has a user or assistant message, else with the first of them (Pi 1.6.0).
"""

from __future__ import annotations

from pathlib import Path

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.errors import UnknownEntryError
from pi_sessiond.store.layout import new_entry_id
from pi_sessiond.store.session import Session
from pi_sessiond.store.tree import SessionTree


def fork_session(source: Session, leaf_id: str, directory: Path | None = None) -> Session:
    """A new session (new id and file beside the source) holding the path to ``leaf_id``."""
    path = source.path_to(leaf_id)
    if not path:
        raise UnknownEntryError(leaf_id)
    kept = [e for e in path if e.type != "label"]
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
    fork.write_now()
    return fork

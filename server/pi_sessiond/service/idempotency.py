"""Appends a client may retry: entries that carry their own ``id``.

Rules:
- An entry may name its ``id`` (a string, unique in the request; empty names none);
  it is written under that id, and the entry after it is its child.
- A request whose entries all name ids that exist, each with the same content
  (everything but ``id``, ``parentId`` and ``timestamp``), is a retry: it
  answers those entries and writes nothing.
- Other content under an existing id, or a request of which only some named
  ids exist, is :class:`Conflict` naming ``entries.<i>.id``; nothing is written.
- Entries without an id get the store's ids, as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from pi_protocol.base import JsonDict
from pi_sessiond.errors import Conflict, InvalidParams
from pi_sessiond.store.building import Completer
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.session import Session

ASSIGNED = ("id", "parentId", "timestamp")


def own_ids(rows: Sequence[JsonDict]) -> list[str | None]:
    """Each row's own id (``None`` where it names none); :class:`InvalidParams` for a bad or repeated one."""
    ids: list[str | None] = []
    for index, row in enumerate(rows):
        own = row.get("id") or None  # absent, null and "" name none
        if own is not None and not isinstance(own, str):
            raise InvalidParams(f"entries.{index}.id: expected a string")
        if own is not None and own in ids:
            raise InvalidParams(f"entries.{index}.id: {own!r} appears twice in the request")
        ids.append(own)
    return ids


def retried(session: Session, rows: Sequence[JsonDict], ids: Sequence[str | None]) -> list[Entry] | None:
    """The entries a retried request already wrote, or ``None`` when it is new (see the module docstring)."""
    named = [(i, own) for i, own in enumerate(ids) if own is not None]
    if not named:
        return None
    found = {i: session.tree.by_id.get(own) for i, own in named}
    if all(entry is None for entry in found.values()):
        return None
    missing = [i for i, entry in found.items() if entry is None]
    if missing or len(named) != len(rows):
        index = missing[0] if missing else next(i for i, own in enumerate(ids) if own is None)
        raise Conflict(f"entries.{index}.id: part of this request was written before (a retry must resend "
                       "the same entries, each with its id)", data={"index": index})
    for i, entry in found.items():
        assert entry is not None
        if _content(entry.data) != _content(rows[i]):
            raise Conflict(f"entries.{i}.id: {ids[i]!r} exists with other content", data={"index": i})
    return [entry for entry in found.values() if entry is not None]


def completer(ids: Sequence[str | None]) -> Completer:
    """The store's ``complete`` hook that writes each entry under its own id (where it names one)."""

    def complete(position: int, full: JsonDict) -> JsonDict:
        own = ids[position]
        return full if own is None else {**full, "id": own}

    return complete


def _content(data: JsonDict) -> JsonDict:
    return {k: v for k, v in data.items() if k not in ASSIGNED}

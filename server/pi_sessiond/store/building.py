"""Rows into entries, entries into file bytes: the two shapes of a session's data.

- :func:`build_entries` turns rows without ``id``/``parentId``/``timestamp``
  (what ``pi/append`` and our own writers hand the store) into entries chained
  under ``parent``, with fresh ids that collide neither with the session's nor
  with each other, in Pi's key order (``custom`` and ``custom_message`` keep
  their own fields first). ``complete`` finishes an entry whose id, parent and
  time were just assigned (a retain-none compaction's own id, its checkpoint's time).
- :func:`render_file` is the whole file: the header, every entry as it was
  read (its raw line) or as it is built, and the lines the reader skipped for
  their depth copied back after the entry they followed (``reader.py``): a
  rewrite never drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence

from pi_protocol.base import JsonDict
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.layout import new_entry_id, new_session_id, now_iso
from pi_sessiond.store.migrate import CURRENT_VERSION

Completer = Callable[[int, JsonDict], JsonDict]
"""Finishes an entry whose id, parentId and timestamp were just assigned, given its row's position in the
request (see ``Session.append``). It may be called again for the same row: an append that finds the file
grown under it builds its entries once more."""
_OWN_FIELDS_FIRST = frozenset({"custom", "custom_message"})


def build_entries(rows: Sequence[JsonDict], parent: str | None, taken: Container[str],
                  complete: Completer | None = None) -> list[Entry]:
    """``rows`` as entries, each the child of the one before (the first of ``parent``)."""
    built: list[Entry] = []
    for position, data in enumerate(rows):
        kind = str(data["type"])
        base = {"id": new_entry_id(_Taken(taken, built)), "parentId": parent, "timestamp": now_iso()}
        rest = {k: v for k, v in data.items() if k not in ("type", "id", "parentId", "timestamp")}
        full = {"type": kind, **rest, **base} if kind in _OWN_FIELDS_FIRST else {"type": kind, **base, **rest}
        entry = Entry.from_data(complete(position, full) if complete is not None else full)
        built.append(entry)
        parent = entry.id
    return built


def render_file(header: JsonDict, entries: Sequence[Entry], kept: Sequence[tuple[Entry | None, bytes]]) -> bytes:
    """The file's bytes (see the module docstring); ``kept``: (the entry a skipped line followed, the line)."""
    after: dict[int, list[bytes]] = {}
    for entry, line in kept:
        after.setdefault(id(entry), []).append(line + b"\n")
    parts = [dumps(header) + b"\n", *after.pop(id(None), ())]
    for entry in entries:
        raw = entry.raw
        parts.append((raw if raw is not None else dumps(entry.data)) + b"\n")
        parts.extend(after.pop(id(entry), ()))
    parts.extend(line for lines in after.values() for line in lines)  # their entry was dropped
    return b"".join(parts)


def new_header(cwd: str, session_id: str, parent_session: str | None = None) -> JsonDict:
    """A new session's header in Pi's key order (``parentSession`` for a fork)."""
    header: JsonDict = {"type": "session", "version": CURRENT_VERSION, "id": session_id, "timestamp": now_iso(),
                        "cwd": cwd}
    if parent_session is not None:
        header["parentSession"] = parent_session
    return header


def placeholder_header() -> JsonDict:
    """The header of a 0-byte file opened as a new session (written with its first message)."""
    return {"type": "session", "version": CURRENT_VERSION, "id": new_session_id(), "cwd": ""}


class _Taken:
    """Ids in use: the session's plus those built in the current append."""

    def __init__(self, by_id: Container[str], built: list[Entry]) -> None:
        self._by_id = by_id
        self._built = built

    def __contains__(self, entry_id: object) -> bool:
        return entry_id in self._by_id or any(e.id == entry_id for e in self._built)

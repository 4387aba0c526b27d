"""Pi's session-format migrations, v1 -> v2 -> v3, in memory.

v1 entries have no ids: the k-th entry (1-based, header excluded) gets the
deterministic id ``%08x % k`` and the previous entry as parent, making one
chain; a v1 compaction's ``firstKeptEntryIndex`` (index into the whole file,
header = 0) becomes ``firstKeptEntryId`` when that entry already has an id.
v2 -> v3 renames the ``hookMessage`` role to ``custom``. Keys are added the
way Pi's in-place mutation adds them (at the end of the object), so a file we
rewrite reads like one Pi rewrote.

Entries without an id in a v2/v3 file are read as Pi reads them: nothing can
name one as its parent, so one in the middle of the file is unreachable and is
dropped with a warning; the file's last entry is Pi's leaf whatever its id, so
an id-less last entry is kept, under the local id ``noid-L<line>`` (never
written; an entry appended after it names that id as its parent, which Pi reads
as a root, as it would its own append there).
"""

from __future__ import annotations

from typing import Any

from pi_sessiond.store.entry import Entry
from pi_sessiond.store.reader import ReadResult, Warning
from pi_sessiond.store.table import EntryTable

CURRENT_VERSION = 3


def header_version(header: dict[str, Any] | None) -> int:
    """The file's format version (a header without ``version`` is v1)."""
    version = header.get("version") if header else None
    return version if isinstance(version, int) and not isinstance(version, bool) else 1


def migrate(result: ReadResult) -> bool:
    """Bring ``result`` to the current version in place; True when anything changed."""
    version = header_version(result.header)
    if version >= CURRENT_VERSION:
        _drop_idless(result)
        return False
    if version < 2:
        _v1_to_v2(result)
    else:
        _drop_idless(result)
    _v2_to_v3(result)
    return True


def _v1_to_v2(result: ReadResult) -> None:
    if result.header is not None:
        result.header["version"] = 2
    by_index: dict[int, Entry] = {}
    prev: str | None = None
    for k, entry in enumerate(result.entries, start=1):
        data = entry.data
        entry.detach()
        data["id"] = entry.id = f"{k:08x}"
        data["parentId"] = entry.parent_id = prev
        prev = entry.id
        by_index[k] = entry
        if entry.type == "compaction":
            _convert_kept_index(data, by_index)


def _convert_kept_index(data: dict[str, Any], by_index: dict[int, Entry]) -> None:
    index = data.get("firstKeptEntryIndex")
    if isinstance(index, int | float) and not isinstance(index, bool):
        target = by_index.get(int(index)) if float(index).is_integer() else None
        if target is not None:
            data["firstKeptEntryId"] = target.id
        del data["firstKeptEntryIndex"]


def _v2_to_v3(result: ReadResult) -> None:
    if result.header is not None:
        result.header["version"] = 3
    for entry in result.entries:
        if entry.type != "message":
            continue
        message = entry.message
        if message is not None and message.get("role") == "hookMessage":
            entry.detach()
            message["role"] = "custom"


def _drop_idless(result: ReadResult) -> None:
    entries = result.entries
    if "" not in (entries.ids if isinstance(entries, EntryTable) else [e.id for e in entries]):
        return  # the usual case, decided from the id column without making entries
    kept = []
    entries = list(result.entries)
    for entry in entries[:-1]:
        if entry.id:
            kept.append(entry)
        else:
            result.warnings.append(Warning(entry.line, "entry without an id skipped"))
    last = entries[-1]
    if not last.id:
        last.id = f"{IDLESS_PREFIX}{last.line}"
    result.entries = [*kept, last]


IDLESS_PREFIX = "noid-L"
"""The local id of an id-less last entry (see the module docstring)."""

"""The projection of a leaf: Pi 1.6.0's ``buildSessionProjection``, the one context rule.

``project_path(path)`` takes a root -> leaf path (``context_edit`` entries
and system messages included):

1. the thinking level (latest ``thinking_level_change``) and model (latest
   ``model_change`` or assistant message) are read from the whole path;
2. the *context entries* are selected: without a compaction, the path; with
   one, the newest compaction, then the path entries before it from its
   ``firstKeptEntryId`` on (none when that id is not before it, e.g. a
   retain-none compaction whose id is its own), system-message entries of
   that kept range dropped (the checkpoint replays them), then every entry
   after it;
3. the latest ``context_edit`` per ``targetId`` among the context entries
   wins (edits are branch-relative; a target summarized away is not selected,
   so its edit does nothing);
4. each context entry contributes ``entry_messages`` (``kinds.py``) with its
   edit applied by :func:`project_entry`; a compaction that is not the first
   context entry contributes nothing.

Messages are Pi's JSON objects; unedited stored messages are shared, not copied.

A projection of the live leaf (``store/livecontext.py``) carries a
:class:`ProjectionLog`: which of its entries were re-projected in place since
the live projection was last rebuilt, so consumers that derive per-entry data
(compaction's preparation index) fold in only what was appended or re-projected.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.kinds import EDITABLE_ROLES, entry_messages
from pi_sessiond.store.table import ids_of, types_of


@attrs.frozen
class ProjectedEntry:
    """One context entry and the messages it contributes (Pi's ``{sourceEntry, messages}``)."""

    entry: Entry
    messages: Sequence[JsonDict]
    edit: Entry | None = None

    @property
    def omitted(self) -> bool:
        """Whether an edit removed messages the entry would otherwise contribute."""
        return self.edit is not None and not self.messages and bool(entry_messages(self.entry))


@attrs.define(eq=False)
class ProjectionLog:
    """The history of one live projection, from its last rebuild on.

    Contract: between two rebuilds the live projection's entries only grow at
    the end, or entry ``i`` is re-projected in place (a context edit), and then
    ``i`` is appended to ``replaced``. A rebuild starts a new log, so anything a
    consumer keeps in ``memo`` (keyed by the consumer's name) dies with it.
    """

    replaced: list[int] = attrs.field(factory=list)
    memo: dict[str, Any] = attrs.field(factory=dict)


@attrs.frozen
class Projection:
    """Pi's ``SessionProjection``: ``messages`` is the flattened ``entries[*].messages``.

    ``log`` is set on a snapshot of the live projection: the snapshot's entries are
    its projection after ``log.replaced[:log_length]`` (``None`` for any other).
    """

    entries: Sequence[ProjectedEntry]
    thinking_level: Any = "off"
    model: JsonDict | None = None
    log: ProjectionLog | None = attrs.field(default=None, eq=False, repr=False)
    log_length: int = attrs.field(default=0, eq=False, repr=False)

    @property
    def messages(self) -> list[JsonDict]:
        """Every projected message in order (a new list)."""
        return [m for projected in self.entries for m in projected.messages]


def path_settings(path: Sequence[Entry]) -> tuple[Any, JsonDict | None]:
    """``(thinkingLevel, model)`` of a path, as ``getSessionContextSettings``.

    Each setting is the latest entry that sets it, so the path is read from the
    leaf back and only those entries are parsed (roles come from the skeleton;
    on a :class:`~pi_sessiond.store.table.PathView` the types need no entry).
    """
    types = types_of(path)
    try:  # a C-speed search back: no entry is made on the way
        latest = len(types) - 1 - types[::-1].index("thinking_level_change")
        thinking: Any = apply_settings(path[latest], None, None)[0]
    except ValueError:
        thinking = "off"
    for at in range(len(types) - 1, -1, -1):
        kind = types[at]
        if kind == "model_change" or (kind == "message" and _is_assistant(path[at])):
            return thinking, apply_settings(path[at], None, None)[1]
    return thinking, None


def _is_assistant(entry: Entry) -> bool:
    return entry.role == "assistant" and entry.message is not None


def apply_settings(entry: Entry, thinking: Any, model: JsonDict | None) -> tuple[Any, JsonDict | None]:
    """The settings after ``entry``."""
    kind = entry.type
    if kind == "thinking_level_change":
        return entry.data.get("thinkingLevel"), model
    if kind == "model_change":
        return thinking, _model(entry.data.get("provider"), entry.data.get("modelId"))
    message = entry.message if kind == "message" and entry.role == "assistant" else None
    if message is not None:
        return thinking, _model(message.get("provider"), message.get("model"))
    return thinking, model


def _model(provider: Any, model_id: Any) -> JsonDict:
    return {k: v for k, v in (("provider", provider), ("modelId", model_id)) if v is not None}


def context_entries(path: Sequence[Entry]) -> list[Entry]:
    """Pi's ``buildContextEntries`` over a path (step 2 of the module docstring).

    Read from the leaf back (ids on a path are unique): only the kept range's
    roles are looked at, so entries summarized away are never parsed.
    """
    types = types_of(path)
    try:
        at = len(types) - 1 - types[::-1].index("compaction")
    except ValueError:
        return list(path)
    latest = path[at]
    first_kept = latest.data.get("firstKeptEntryId")
    ids = ids_of(path)
    start = at - 1
    while start >= 0 and ids[start] != first_kept:
        start -= 1
    selected = [latest]
    if start >= 0:
        selected.extend(e for e in path[start:at] if not (e.type == "message" and e.role == "system"))
    selected.extend(path[at + 1 :])
    return selected


def latest_edits(entries: Sequence[Entry]) -> dict[str, Entry]:
    """The latest ``context_edit`` per target among ``entries`` (later wins)."""
    edits: dict[str, Entry] = {}
    for entry in entries:
        if entry.type == "context_edit":
            target = entry.data.get("targetId")
            if isinstance(target, str):
                edits[target] = entry
    return edits


def project_entry(entry: Entry, edit: Entry | None) -> list[JsonDict]:
    """Pi's ``projectContextEntry``: the entry's messages with ``edit`` applied."""
    messages = entry_messages(entry)
    if edit is None:
        return messages
    replacement = edit.data.get("replacement")
    if replacement is None:
        return []
    content = replacement.get("content") if isinstance(replacement, dict) else None
    return [_replaced(m, content) for m in messages]


def _replaced(message: JsonDict, content: Any) -> JsonDict:
    role = message.get("role")
    if role not in EDITABLE_ROLES:
        return message
    if role in ("assistant", "toolResult") and isinstance(content, str):
        return {**message, "content": [{"type": "text", "text": content}]}
    return {**message, "content": content}


def project_path(path: Sequence[Entry]) -> Projection:
    """Pi 1.6.0's ``buildSessionProjection`` of a root -> leaf path."""
    thinking, model = path_settings(path)
    selected = context_entries(path)
    edits = latest_edits(selected)
    projected = [_project(entry, i, edits) for i, entry in enumerate(selected)]
    return Projection(projected, thinking, model)


def _project(entry: Entry, index: int, edits: Mapping[str, Entry]) -> ProjectedEntry:
    edit = edits.get(entry.id)
    if entry.type == "compaction" and index > 0:
        return ProjectedEntry(entry, [], edit)
    return ProjectedEntry(entry, project_entry(entry, edit), edit)

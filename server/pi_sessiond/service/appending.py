"""``pi/append``: validate, write, measure, and maybe start an auto-compaction.

Contracts:
- Entries of a known type are structured with the protocol classes (a wrong
  field is :class:`InvalidParams` naming ``entries.<i>.<field>``) and written
  through them; entries of an unknown type pass as they are. ``id``,
  ``parentId`` and ``timestamp`` are assigned by the store.
- An entry whose JSON is above ``daemon.maxMessageBytes`` is :class:`TooLarge`;
  nothing of the request is written then.
- An entry may carry its own ``id``: a retried request is answered without
  writing, other content under an existing id is ``conflict``
  (``service.idempotency``).
- Durability: ``daemon.fsync`` ``always`` fsyncs every append, ``never`` not.
- The auto-compaction check (``service.autocompacting``) mirrors Pi's
  ``_checkCompaction`` threshold branch (not its overflow branch) for the last
  assistant message of the append where Pi's rule applies, else the context's
  own count decides on every append; ``compaction.autoPerTurn`` and the loop
  guard say how many run per turn (a user message starts a turn), and none
  runs beside a running job. The result's ``compaction`` says whether one
  started. Below the threshold,
  ``compaction.prepareAt`` may start a background draft (``service.compacting.preparing``);
  a threshold crossed while it runs is compacted by it once it is ready.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from pi_protocol import ENTRY_TYPES, StructureError, methods, structure, unstructure
from pi_protocol.base import JsonDict
from pi_protocol.params import AppendParams
from pi_protocol.results import AppendCompaction, AppendResult, SessionChanged
from pi_sessiond.compaction.tokens import assistant_usage, calculate_context_tokens, should_compact
from pi_sessiond.errors import InvalidParams, TooLarge
from pi_sessiond.estimators import context_tokens
from pi_sessiond.jsonio.jsontext import dumps
from pi_sessiond.service import autocompacting, idempotency
from pi_sessiond.service.interface import Notify
from pi_sessiond.service.models import context_window
from pi_sessiond.service.sessions.registry import OpenSession
from pi_sessiond.service.sessions.scope import Scope
from pi_sessiond.service.stats import leaf_context_tokens, projected_context_tokens, usage_is_fresh
from pi_sessiond.store.entry import Entry


class Growth(Protocol):
    """What an append sets off (``service.compacting.preparing.Preparing``)."""

    def after_append(self, scope: Scope, due: bool, tokens: int, limit: int = 1) -> AppendCompaction | None:
        """``due``: the threshold was reached by the rule in force; ``tokens``: the leaf's context size now;
        ``limit``: automatic compactions allowed per turn (``0``: no limit). Whether one started for it."""
        ...


async def append(scope: Scope, params: AppendParams, notify: Notify, growth: Growth) -> AppendResult:
    """Append the entries under the leaf; see the module docstring."""
    settings = scope.settings
    rows = validate_entries(params.entries, settings.daemon.max_message_bytes)
    session = scope.durable()
    ids = idempotency.own_ids(rows)
    with session.lock:  # the retry check and the write see the same tree
        again = idempotency.retried(session, rows, ids)
        written = again if again is not None else session.append(rows, complete=idempotency.completer(ids))
    if again is not None:
        return _result(scope, again)
    _track_turn(scope.opened, written)
    context = session.context()
    tokens = leaf_context_tokens(session, context.messages, settings.tokenizer)
    window = context_window(settings, context.model)
    notify(methods.SESSION_CHANGED, SessionChanged(session_id=scope.key, leaf_id=session.leaf_id, reason="append"))
    due = (settings.compaction.enabled and _reached(scope, written, tokens, window)
           and not _held_back(scope.opened, tokens))
    started = growth.after_append(scope, due, tokens, autocompacting.limit_for(session, settings.compaction))
    return _result(scope, written, tokens, window, started)


def _result(scope: Scope, written: Sequence[Entry], tokens: int | None = None, window: int | None = None,
            started: AppendCompaction | None = None) -> AppendResult:
    """The answer (for a retried append: the same ids, nothing written, no compaction started)."""
    session, settings = scope.session, scope.settings
    if tokens is None or window is None:
        context = session.context()
        tokens = leaf_context_tokens(session, context.messages, settings.tokenizer)
        window = context_window(settings, context.model)
    return AppendResult(
        ids=[e.id for e in written],
        leaf_id=session.leaf_id,
        context_tokens=tokens,
        should_compact=should_compact(tokens, window, scope.compaction),
        estimated_context_tokens=projected_context_tokens(session, settings.tokenizer, usage_based=tokens),
        compaction=started,
    )


def _reached(scope: Scope, written: Sequence[Entry], tokens: int, window: int) -> bool:
    """The threshold by the rule in force for the session (``service.autocompacting``)."""
    if autocompacting.pi_rule(scope.session, scope.settings.compaction):
        return threshold_reached(scope, written, window)
    return autocompacting.count_reached(written, tokens, window, scope.compaction)


def validate_entries(entries: Sequence[Any], max_bytes: int) -> list[JsonDict]:
    """The rows to append, or :class:`InvalidParams` / :class:`TooLarge` for the first bad one."""
    rows: list[JsonDict] = []
    for index, raw in enumerate(entries):
        if not isinstance(raw, dict):
            raise InvalidParams(f"entries.{index}: expected an object")
        kind = raw.get("type")
        if not isinstance(kind, str) or not kind or kind == "session":
            raise InvalidParams(f"entries.{index}.type: expected an entry type (a string other than 'session')")
        cls = ENTRY_TYPES.get(kind)
        row: JsonDict = raw
        if cls is not None:
            try:
                row = unstructure(structure(raw, cls))
            except StructureError as exc:
                raise InvalidParams(str(exc.at(index).at("entries"))) from exc
        size = len(dumps(row))
        if size > max_bytes:
            raise TooLarge(f"entries.{index}: {size} bytes is above daemon.maxMessageBytes ({max_bytes})",
                           data={"index": index, "bytes": size, "limit": max_bytes})
        rows.append(row)
    return rows


def _held_back(opened: OpenSession, tokens: int) -> bool:
    """After ``pi/undo``: no auto-compaction until the context reaches the floor it set (then it is cleared)."""
    floor = opened.auto_compaction_floor
    if floor is not None and tokens < floor:
        return True
    opened.auto_compaction_floor = None
    return False


def _track_turn(opened: OpenSession, written: Sequence[Entry]) -> None:
    """A user message starts a turn (the loop guard, the turn's count of automatic compactions and Pi's overflow
    flag reset); a non-error assistant message resets Pi's overflow flag."""
    for entry in written:
        role = entry.role
        if role == "user":
            opened.turn_compacted = False
            opened.overflow_attempted = False
            opened.auto_count, opened.auto_stalled = 0, None
        elif role == "assistant" and (entry.message or {}).get("stopReason") != "error":
            opened.overflow_attempted = False


def threshold_reached(scope: Scope, written: Sequence[Entry], window: int) -> bool:
    """Pi's threshold check for the last assistant message appended: its usage (or, for an error reply with
    fresh usage, the estimated context) past ``window − reserveTokens``; never for an aborted reply."""
    session = scope.session
    last = next((e for e in reversed(written) if e.role == "assistant"), None)
    message = last.message if last is not None else None
    if message is None or message.get("stopReason") == "aborted":
        return False
    if message.get("stopReason") == "error":
        if usage_is_fresh(session) is not True:
            return False  # no valid usage, or only usage from before the newest compaction
        tokens = context_tokens(session.context().messages, scope.settings.tokenizer).tokens
    else:
        usage = assistant_usage(message)
        tokens = calculate_context_tokens(usage) if usage is not None else 0
    return should_compact(tokens, window, scope.compaction)

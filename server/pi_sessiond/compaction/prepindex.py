"""What a preparation needs from a projection, per entry, kept up to date as the live projection grows.

A :class:`PreparationIndex` holds, for the entries of one projection (by index):

* ``flat`` / ``offsets``: the messages a compaction summarizes (Pi's
  ``getMessagesFromProjectedEntryForCompaction``: none from compaction entries,
  no ``role: "system"`` message), flattened; entry ``i``'s are
  ``flat[offsets[i]:offsets[i + 1]]``, so a range's messages are one slice;
* ``tokens(i)``: ``estimate_tokens`` summed over entry ``i``'s projected
  messages, computed on first use and kept (the cut point's budget walk and the
  trailing part of the context estimate read only the newest entries); the sum
  over all entries once a pure estimate needed it;
* the entries holding system messages, the compactions with messages (the
  previous compaction is the first) and the newest entry with valid usage;
* the file operations of one entry range ``[lo, hi)`` as counts per path, so the
  range's end moves, or an entry inside it is re-projected, by adding and
  subtracting only the messages concerned;
* per ``(start, keep)`` the last budget stop of the cut-point walk with the
  tokens from it to the end, the tokens after the newest usage, and the last
  usage-trust check: after appends each moves on over the new entries only
  (the stop only ever moves forward: suffix sums only grow), and any
  re-projection drops them.

Invariant: after :meth:`PreparationIndex.catch_up` every fact equals what a
fresh index of that projection holds. The live projection (``store/livecontext.py``)
only grows at the end or re-projects entries in place, and its
:class:`~pi_sessiond.store.projection.ProjectionLog` says which; an index kept
in the log's ``memo`` folds in only the appended and re-projected entries
(plus the shift of later offsets when an edit changes an entry's message
count). A rebuilt projection (leaf moved, compaction appended) has a new log,
so a new index. A snapshot older than what the shared index has folded in (a
worker thread's) is served by a fresh index of its own.
"""

from __future__ import annotations

import bisect
import threading
from array import array
from collections.abc import Iterable, Sequence

from pi_protocol.base import JsonDict
from pi_sessiond.compaction.cutpoint import budget_stop
from pi_sessiond.compaction.fileops import FileOperations, FileOpsCollector, file_op_paths
from pi_sessiond.compaction.tokens import (
    assistant_usage,
    calculate_context_tokens,
    estimate_tokens,
    usage_trusted_on,
)
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.projection import ProjectedEntry, Projection
from pi_sessiond.store.system import current_system_message

MEMO_KEY = "compaction.preparation"


def _compaction_messages(projected: ProjectedEntry) -> tuple[list[JsonDict], bool]:
    """(the entry's summarizable messages, whether it holds a system message)."""
    messages = projected.messages
    has_system = False
    for message in messages:
        if message.get("role") == "system":
            has_system = True
            break
    if projected.entry.type == "compaction":
        return [], has_system
    if has_system:
        return [m for m in messages if m.get("role") != "system"], True
    return list(messages), False


def _usage_at(projected: ProjectedEntry) -> int:
    """Index of the entry's newest message with valid usage, or -1."""
    messages = projected.messages
    for k in range(len(messages) - 1, -1, -1):
        if assistant_usage(messages[k]) is not None:
            return k
    return -1


def _summed(messages: Iterable[JsonDict]) -> int:
    return sum(estimate_tokens(m) for m in messages)


class RangeFileOps:
    """File operations of the summarizable messages of entries ``[lo, hi)``, as counts per path."""

    def __init__(self) -> None:
        self.lo = 0
        self.hi = 0
        self._counts: dict[str, dict[str, int]] = {"read": {}, "write": {}, "edit": {}}

    def add(self, messages: Iterable[JsonDict], sign: int) -> None:
        """Count the operations of ``messages`` in (``sign`` 1) or out (``sign`` -1)."""
        counts = self._counts
        for tool, path in file_op_paths(messages):
            bucket = counts[tool]
            left = bucket.get(path, 0) + sign
            if left:
                bucket[path] = left
            else:
                del bucket[path]

    def reset(self) -> None:
        """Forget everything: the range becomes empty."""
        self.lo = self.hi = 0
        for bucket in self._counts.values():
            bucket.clear()

    def freeze(self, previous: Entry | None) -> FileOperations:
        """The range's operations plus ``previous``'s details (Pi's ``extractFileOperations``)."""
        counts = self._counts
        collector = FileOpsCollector(set(counts["read"]), set(counts["write"]), set(counts["edit"]))
        if previous is not None:
            collector.add_details(previous.data)
        return collector.freeze()


class PreparationIndex:
    """Per-entry preparation facts of one projection (see the module docstring).

    Not thread-safe by itself: hold ``lock`` around :meth:`catch_up` and the reads after it.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.entries: Sequence[ProjectedEntry] = ()
        self.flat: list[JsonDict] = []
        self.offsets = array("q", [0])
        self._seen = 0
        self._replaced_seen = 0
        self._tokens = array("q")  # -1 = not computed yet
        self._total: int | None = None  # sum of all tokens, once a pure estimate needed it
        self._systems: list[int] = []  # entries with a system message, ascending
        self._compactions: list[int] = []  # compaction entries with messages, ascending
        self._usage = -1  # the newest entry with valid usage among entries [0, _usage_upto)
        self._usage_upto = 0
        self._ops = RangeFileOps()
        # The budget walks per (start, keep): (end, stop, tokens of [stop or start, end)), the trailing
        # tokens after the newest usage (usage entry, end, sum) and the last trust check (usage id,
        # leaf entry, path length, result): moved forward on appends, dropped by any re-projection.
        self._windows: dict[tuple[int, int], tuple[int, int | None, int]] = {}
        self._trail: tuple[int, int, int] | None = None
        self._trust: tuple[str, Entry, int, bool] | None = None

    # ------------------------------------------------------------ following
    def can_follow(self, projection: Projection) -> bool:
        """Whether ``projection`` is this index's projection now or later (never earlier)."""
        return len(projection.entries) >= self._seen and projection.log_length >= self._replaced_seen

    def catch_up(self, projection: Projection) -> None:
        """Fold in what changed since the last call; requires :meth:`can_follow`."""
        self.entries = projection.entries
        log = projection.log
        if log is not None:
            for index in log.replaced[self._replaced_seen : projection.log_length]:
                if index < self._seen:
                    self._reproject(index)
            self._replaced_seen = projection.log_length
        for index in range(self._seen, len(self.entries)):
            self._append(index)
        self._seen = len(self.entries)

    def _append(self, index: int) -> None:
        projected = self.entries[index]
        messages, has_system = _compaction_messages(projected)
        self.flat.extend(messages)
        self.offsets.append(len(self.flat))
        if self._total is None:
            self._tokens.append(-1)
        else:
            tokens = _summed(projected.messages)
            self._tokens.append(tokens)
            self._total += tokens
        if has_system:
            self._systems.append(index)
        if projected.entry.type == "compaction" and projected.messages:
            self._compactions.append(index)

    def _reproject(self, index: int) -> None:
        self._windows.clear()
        self._trail = None
        projected = self.entries[index]
        messages, has_system = _compaction_messages(projected)
        lo, hi = self.offsets[index], self.offsets[index + 1]
        if self._ops.lo <= index < self._ops.hi:
            self._ops.add(self.flat[lo:hi], -1)
            self._ops.add(messages, 1)
        self.flat[lo:hi] = messages
        delta = len(messages) - (hi - lo)
        if delta:
            for i in range(index + 1, len(self.offsets)):
                self.offsets[i] += delta
        self._retoken(index, projected)
        _set_member(self._systems, index, has_system)
        _set_member(self._compactions, index, projected.entry.type == "compaction" and bool(projected.messages))
        self._reusage(index, projected)

    def _retoken(self, index: int, projected: ProjectedEntry) -> None:
        if self._total is None:
            self._tokens[index] = -1
            return
        tokens = _summed(projected.messages)
        self._total += tokens - self._tokens[index]
        self._tokens[index] = tokens

    def _reusage(self, index: int, projected: ProjectedEntry) -> None:
        if index >= self._usage_upto or index < self._usage:
            return
        if _usage_at(projected) >= 0:
            self._usage = index  # entries after the newest usage have none: this one is now the newest
        elif index == self._usage:
            self._usage = self._scan_usage(index - 1, -1)

    # ------------------------------------------------------------ reading
    def tokens(self, index: int) -> int:
        """``estimate_tokens`` summed over ``entries[index].messages`` (cached)."""
        tokens = self._tokens[index]
        if tokens < 0:
            tokens = _summed(self.entries[index].messages)
            self._tokens[index] = tokens
        return tokens

    def system_entries(self) -> list[int]:
        """Indices of the entries holding a system message, ascending (a new list)."""
        return list(self._systems)

    def previous_compaction(self) -> int:
        """Index of the first compaction entry with messages, or -1."""
        return self._compactions[0] if self._compactions else -1

    def messages(self, lo: int, hi: int) -> tuple[JsonDict, ...]:
        """The summarizable messages of entries ``[lo, hi)``."""
        return tuple(self.flat[self.offsets[lo] : self.offsets[hi]])

    def file_ops(self, lo: int, hi: int, previous: Entry | None) -> FileOperations:
        """File operations of entries ``[lo, hi)`` plus ``previous``'s details."""
        ops = self._ops
        if ops.lo != lo:
            ops.reset()
            ops.lo = ops.hi = lo
        if hi > ops.hi:
            ops.add(self.flat[self.offsets[ops.hi] : self.offsets[hi]], 1)
        elif hi < ops.hi:
            ops.add(self.flat[self.offsets[hi] : self.offsets[ops.hi]], -1)
        ops.hi = hi
        return ops.freeze(previous)

    def budget_stop(self, start: int, end: int, keep: int) -> int | None:
        """``cutpoint.budget_stop`` over these entries' token estimates, moved on from the last call."""
        window = self._windows.get((start, keep))
        if keep <= 0 or window is None or window[0] > end:
            stop = budget_stop(start, end, keep, self.tokens)
            acc = sum(self.tokens(i) for i in range(start if stop is None else stop, end))
        else:
            stop, acc = window[1], window[2] + sum(self.tokens(i) for i in range(window[0], end))
            if stop is None and acc >= keep:
                stop = start  # the whole range reaches the budget now: advance from its start
            if stop is not None:  # the largest stop whose suffix still reaches keep
                while stop + 1 < end and acc - self.tokens(stop) >= keep:
                    acc -= self.tokens(stop)
                    stop += 1
        if len(self._windows) >= 16:  # a handful of settings in use; never unbounded
            self._windows.clear()
        self._windows[(start, keep)] = (end, stop, acc)
        return stop

    def context_tokens(self, branch: Sequence[Entry]) -> int:
        """Pi 1.6.0's ``estimateProjectedContextTokens(projection, branch).tokens``."""
        index = self.newest_usage()
        if index >= 0:
            projected = self.entries[index]
            if self._trusted(branch, projected.entry.id):
                k = _usage_at(projected)
                usage = assistant_usage(projected.messages[k])
                assert usage is not None  # newest_usage found it
                return calculate_context_tokens(usage) + _summed(projected.messages[k + 1 :]) + self._after(index)
        return self._pure_estimate()

    def _after(self, index: int) -> int:
        """Tokens of the entries after ``index``."""
        trail = self._trail
        if trail is None or trail[0] != index:
            trail = (index, index + 1, 0)
        total = trail[2] + sum(self.tokens(i) for i in range(trail[1], self._seen))
        self._trail = (index, self._seen, total)
        return total

    def _trusted(self, branch: Sequence[Entry], usage_id: str) -> bool:
        """``usage_trusted_on(branch, usage_id)``; on a branch that extends the last one, only its new part is read."""
        trust = self._trust
        extends = trust is not None and trust[0] == usage_id and 0 < trust[2] <= len(branch) \
            and branch[trust[2] - 1] is trust[1]  # the same path up to the last leaf (a path ends in its leaf)
        if trust is not None and extends:
            fresh = branch[trust[2] :]
            result = trust[3] and not any(e.type in ("context_edit", "compaction") for e in fresh)
        else:
            result = usage_trusted_on(branch, usage_id)
        if branch:
            self._trust = (usage_id, branch[-1], len(branch), result)
        return result

    def newest_usage(self) -> int:
        """Index of the newest entry with a message with valid usage, or -1."""
        found = self._scan_usage(self._seen - 1, self._usage_upto - 1)
        if found >= 0:
            self._usage = found
        self._usage_upto = self._seen
        return self._usage

    def _scan_usage(self, first: int, stop: int) -> int:
        """The newest entry with valid usage in ``(stop, first]``, scanning down, or -1."""
        for index in range(first, stop, -1):
            if _usage_at(self.entries[index]) >= 0:
                return index
        return -1

    def _pure_estimate(self) -> int:
        """``pure_estimate`` of the projected messages: the system message once, plus the rest."""
        if self._total is None:
            self._total = sum(self.tokens(i) for i in range(self._seen))
        system_messages = [m for i in self._systems for m in self.entries[i].messages if m.get("role") == "system"]
        system = current_system_message(system_messages)
        head = estimate_tokens(system) if system is not None else 0
        return head + self._total - _summed(system_messages)


def _set_member(members: list[int], index: int, present: bool) -> None:
    at = bisect.bisect_left(members, index)
    here = at < len(members) and members[at] == index
    if present and not here:
        members.insert(at, index)
    elif here and not present:
        del members[at]


def index_of(projection: Projection) -> PreparationIndex:
    """The live projection's shared index (``projection.log.memo``), or a fresh one.

    Call :meth:`PreparationIndex.can_follow` and :meth:`PreparationIndex.catch_up` under its lock.
    """
    if projection.log is None:
        return PreparationIndex()
    index = projection.log.memo.get(MEMO_KEY)
    if not isinstance(index, PreparationIndex):
        index = projection.log.memo.setdefault(MEMO_KEY, PreparationIndex())
    assert isinstance(index, PreparationIndex)
    return index

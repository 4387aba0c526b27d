"""The file lists a compaction writes: Pi's, plus bash's changes, capped in the summary.

Invariants:

* ``details`` (:attr:`RangeFiles.read_files` / ``modified_files``): Pi 1.6.0's
  cumulative lists (``prep.file_lists``) plus the files the summarized range
  changed through bash commands (:func:`~pi_sessiond.summarizers.bashfiles.changed_paths`),
  which move from read to modified, and the files listed in the file blocks
  of the branch summaries inside the range (Pi's lists do not see an
  abandoned branch's files) — named deviations
  (``test_fix_bash_file_ops_are_tracked``, docs/deviations.md). Without bash
  changes or branch summaries in the range they are exactly Pi's.
* A branch summary's lists (:func:`branch_files`): Pi's, plus the files the
  abandoned entries changed through bash.
* The summary's ``<read-files>``/``<modified-files>`` block lists every file
  modified inside the range; files carried over from earlier summaries and
  read files fill the rest up to ``MAX_PATHS`` paths / ``MAX_BYTES`` bytes,
  in Pi's order, and what did not fit is counted in a last line
  (``[… N more files not listed]``). Under the cap the block is Pi's.
* Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from pi_sessiond.compaction.fileops import FileLists, format_file_operations
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.text import js_sorted
from pi_sessiond.summarizers.facts import file_facts

MAX_PATHS = 200
MAX_BYTES = 16 * 1024
_BLOCK = re.compile(r"<(read|modified)-files>\n(.*?)\n</(?:read|modified)-files>", re.S)


@attrs.frozen
class RangeFiles:
    """What a compaction's ``details`` and file block list."""

    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    bash_modified: tuple[str, ...]
    block: str


def range_files(prep: CompactionPreparation) -> RangeFiles:
    """The lists for ``prep`` (module invariants)."""
    messages = (*prep.messages_to_summarize, *prep.turn_prefix_messages)
    _, modified_in_range, by_bash = file_facts(messages)
    pi = prep.file_lists
    branch_read, branch_modified = summary_blocks(messages)
    extra = [*by_bash, *branch_modified]
    bash = tuple(dict.fromkeys(p for p in extra if p not in pi.modified_files))
    modified = tuple(js_sorted({*pi.modified_files, *bash}))
    read = tuple(p for p in pi.read_files if p not in bash)
    if branch_read:
        read = tuple(js_sorted({*read, *branch_read} - set(modified)))
    block = capped_block(read, modified, frozenset([*modified_in_range, *branch_modified]))
    return RangeFiles(read_files=read, modified_files=modified, bash_modified=bash, block=block)


def summary_blocks(messages: Iterable[Any]) -> tuple[list[str], list[str]]:
    """The read and modified files the ``<read-files>``/``<modified-files>`` blocks of the branch
    summaries in ``messages`` list, first seen first."""
    found: dict[str, dict[str, None]] = {"read": {}, "modified": {}}
    for msg in messages:
        if not isinstance(msg, dict) or msg.get("role") != "branchSummary" or not isinstance(msg.get("summary"), str):
            continue
        for kind, body in _BLOCK.findall(msg["summary"]):
            found[kind].update((line.strip(), None) for line in body.splitlines() if line.strip())
    return list(found["read"]), list(found["modified"])


def branch_files(lists: FileLists, messages: Sequence[Any]) -> FileLists:
    """A branch summary's lists: Pi's ``lists`` plus the files ``messages`` changed through bash."""
    bash = [p for p in file_facts(messages)[2] if p not in lists.modified_files]
    if not bash:
        return lists
    modified = tuple(js_sorted({*lists.modified_files, *bash}))
    return FileLists(tuple(p for p in lists.read_files if p not in modified), modified)


def capped_block(read: tuple[str, ...], modified: tuple[str, ...], in_range: frozenset[str]) -> str:
    """Pi's file block, capped: every ``in_range`` modified file, then the rest while they fit."""
    keep = [p for p in modified if p in in_range]
    used = [len(keep), sum(len(p.encode()) + 1 for p in keep)]

    def fits(path: str) -> bool:
        size = len(path.encode()) + 1
        if used[0] + 1 > MAX_PATHS or used[1] + size > MAX_BYTES:
            return False
        used[0], used[1] = used[0] + 1, used[1] + size
        return True

    carried = {p for p in modified if p not in in_range and fits(p)}
    kept_read = [p for p in read if fits(p)]
    kept_modified = [p for p in modified if p in in_range or p in carried]
    left_out = len(read) + len(modified) - len(kept_read) - len(kept_modified)
    block = format_file_operations(kept_read, kept_modified)
    return block + (f"\n\n[… {left_out} more files not listed]" if left_out else "")

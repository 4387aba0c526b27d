"""The file lists a compaction writes: Pi's, plus bash's changes, capped in the summary.

Invariants:

* ``details`` (:attr:`RangeFiles.read_files` / ``modified_files``): Pi 1.6.0's
  cumulative lists (``prep.file_lists``) plus the files the summarized range
  changed through bash commands (:func:`~pi_sessiond.summarizers.bashfiles.changed_paths`),
  which move from read to modified — a named deviation
  (``test_fix_bash_file_ops_are_tracked``, docs/deviations.md). Without bash
  changes they are exactly Pi's.
* The summary's ``<read-files>``/``<modified-files>`` block lists every file
  modified inside the range; files carried over from earlier summaries and
  read files fill the rest up to ``MAX_PATHS`` paths / ``MAX_BYTES`` bytes,
  in Pi's order, and what did not fit is counted in a last line
  (``[… N more files not listed]``). Under the cap the block is Pi's.
* Pure.
"""

from __future__ import annotations

import attrs

from pi_sessiond.compaction.fileops import format_file_operations
from pi_sessiond.compaction.prepare import CompactionPreparation
from pi_sessiond.compaction.text import js_sorted
from pi_sessiond.summarizers.facts import extract_facts

MAX_PATHS = 200
MAX_BYTES = 16 * 1024


@attrs.frozen
class RangeFiles:
    """What a compaction's ``details`` and file block list."""

    read_files: tuple[str, ...]
    modified_files: tuple[str, ...]
    bash_modified: tuple[str, ...]
    block: str


def range_files(prep: CompactionPreparation) -> RangeFiles:
    """The lists for ``prep`` (module invariants)."""
    facts = extract_facts((*prep.messages_to_summarize, *prep.turn_prefix_messages))
    pi = prep.file_lists
    bash = tuple(p for p in facts.bash_modified if p not in pi.modified_files)
    modified = tuple(js_sorted({*pi.modified_files, *bash}))
    read = tuple(p for p in pi.read_files if p not in bash)
    block = capped_block(read, modified, frozenset(facts.modified_files))
    return RangeFiles(read_files=read, modified_files=modified, bash_modified=bash, block=block)


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

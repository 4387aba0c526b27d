"""Compaction core: pure, synchronous re-implementation of Pi 1.6.0's functions.

Data in, frozen data out; no I/O, no awaits. Each module states its
invariants. Messages are plain dicts in Pi's JSON shape; entries are
``pi_sessiond.store.entry.Entry``; the preparation and the cut work on the
projection (``pi_sessiond.store.projection``).
"""

from pi_sessiond.compaction.branch import (
    BranchCollection,
    BranchPreparation,
    collect_entries_for_branch_summary,
    prepare_branch_entries,
)
from pi_sessiond.compaction.convert import convert_to_llm
from pi_sessiond.compaction.cutpoint import (
    CutPoint,
    find_cut_point,
    find_projected_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
)
from pi_sessiond.compaction.fileops import (
    FileLists,
    FileOperations,
    compute_file_lists,
    format_file_operations,
)
from pi_sessiond.compaction.prepare import CompactionPreparation, prepare_compaction
from pi_sessiond.compaction.prompts import (
    build_branch_prompt,
    build_summary_prompt,
    build_turn_prefix_prompt,
)
from pi_sessiond.compaction.serialize import TOOL_RESULT_MAX_CHARS, serialize_conversation
from pi_sessiond.compaction.tokens import (
    CompactionSettings,
    ContextTokenEstimate,
    calculate_context_tokens,
    estimate_context_tokens,
    estimate_projected_context_tokens,
    estimate_tokens,
    get_last_assistant_usage,
    should_compact,
)

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "BranchCollection",
    "BranchPreparation",
    "CompactionPreparation",
    "CompactionSettings",
    "ContextTokenEstimate",
    "CutPoint",
    "FileLists",
    "FileOperations",
    "build_branch_prompt",
    "build_summary_prompt",
    "build_turn_prefix_prompt",
    "calculate_context_tokens",
    "collect_entries_for_branch_summary",
    "compute_file_lists",
    "convert_to_llm",
    "estimate_context_tokens",
    "estimate_projected_context_tokens",
    "estimate_tokens",
    "find_cut_point",
    "find_projected_cut_point",
    "find_turn_start_index",
    "find_valid_cut_points",
    "format_file_operations",
    "get_last_assistant_usage",
    "prepare_branch_entries",
    "prepare_compaction",
    "serialize_conversation",
    "should_compact",
]

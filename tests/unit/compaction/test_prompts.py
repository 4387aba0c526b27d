"""Prompt structure: exact headings, wrappers and instruction handling (compaction and branch summaries)."""

from __future__ import annotations

import re

from pi_sessiond.compaction.prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
    build_branch_prompt,
    build_summary_prompt,
    build_turn_prefix_prompt,
    merge_split_turn,
)

SUMMARY_HEADINGS = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
    "## Critical Context",
]
CLOSING = "Keep each section concise. Preserve exact file paths, function names, and error messages."


def _headings(prompt: str) -> list[str]:
    return re.findall(r"^#{2,3} .+$", prompt, flags=re.MULTILINE)


def test_system_prompt_opening() -> None:
    assert SUMMARIZATION_SYSTEM_PROMPT.startswith("You are a context summarization assistant.")
    assert len(SUMMARIZATION_SYSTEM_PROMPT.split("\n\n")) == 2


def test_initial_prompt_first_line_headings_and_closing() -> None:
    first = SUMMARIZATION_PROMPT.split("\n")[0]
    assert first == (
        "The messages above are a conversation to summarize. Create a structured context "
        "checkpoint summary that another LLM will use to continue the work."
    )
    assert "\nUse this EXACT format:\n" in SUMMARIZATION_PROMPT
    assert _headings(SUMMARIZATION_PROMPT) == SUMMARY_HEADINGS
    assert SUMMARIZATION_PROMPT.endswith("\n\n" + CLOSING)


def test_update_prompt_first_line_headings_and_closing() -> None:
    assert UPDATE_SUMMARIZATION_PROMPT.split("\n")[0] == (
        "The messages above are NEW conversation messages to incorporate into the existing "
        "summary provided in <previous-summary> tags."
    )
    assert _headings(UPDATE_SUMMARIZATION_PROMPT) == SUMMARY_HEADINGS
    assert UPDATE_SUMMARIZATION_PROMPT.endswith("\n\n" + CLOSING)


def test_turn_prefix_prompt() -> None:
    """1.6.0's headings, in our own words: earlier context, later messages kept, nothing inferred."""
    assert _headings(TURN_PREFIX_SUMMARIZATION_PROMPT) == [
        "## Original Request",
        "## Progress So Far",
        "## Context Needed to Continue",
    ]
    first = TURN_PREFIX_SUMMARIZATION_PROMPT.split("\n")[0]
    assert "earlier part of a conversation" in first and "kept separately" in first
    assert "PREFIX" not in TURN_PREFIX_SUMMARIZATION_PROMPT and "SUFFIX" not in TURN_PREFIX_SUMMARIZATION_PROMPT
    last = TURN_PREFIX_SUMMARIZATION_PROMPT.split("\n\n")[-1]
    assert last.startswith("Summarize only what the messages above explicitly contain.") and "recreate" in last


def test_branch_prompt_has_no_critical_context() -> None:
    assert BRANCH_SUMMARY_PROMPT.split("\n")[0] == (
        "Create a structured summary of this conversation branch for context when returning later."
    )
    assert _headings(BRANCH_SUMMARY_PROMPT) == SUMMARY_HEADINGS[:-1]
    assert BRANCH_SUMMARY_PROMPT.endswith("\n\n" + CLOSING)


def test_summary_prompt_without_previous_summary() -> None:
    assert build_summary_prompt("S") == "<conversation>\nS\n</conversation>\n\n" + SUMMARIZATION_PROMPT


def test_summary_prompt_with_previous_summary_uses_update_prompt() -> None:
    assert build_summary_prompt("S", "P") == (
        "<conversation>\nS\n</conversation>\n\n<previous-summary>\nP\n</previous-summary>\n\n"
        + UPDATE_SUMMARIZATION_PROMPT
    )


def test_empty_previous_summary_counts_as_none() -> None:
    assert build_summary_prompt("S", "") == build_summary_prompt("S")


def test_custom_instructions_are_appended_as_additional_focus() -> None:
    assert build_summary_prompt("S", None, "tests").endswith(SUMMARIZATION_PROMPT + "\n\nAdditional focus: tests")
    assert build_summary_prompt("S", "P", "x").endswith(UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: x")
    assert build_summary_prompt("S", None, "") == build_summary_prompt("S")


def test_turn_prefix_request() -> None:
    assert build_turn_prefix_prompt("T") == "# Conversation\nT\n\n# Instructions\n" + TURN_PREFIX_SUMMARIZATION_PROMPT
    assert build_turn_prefix_prompt("T", "tests") == build_turn_prefix_prompt("T") + "\n\nAdditional focus: tests"
    assert build_turn_prefix_prompt("T", "") == build_turn_prefix_prompt("T")


def test_branch_prompt_append_and_replace() -> None:
    wrap = "<conversation>\nB\n</conversation>\n\n"
    assert build_branch_prompt("B") == wrap + BRANCH_SUMMARY_PROMPT
    assert build_branch_prompt("B", "focus") == wrap + BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: focus"
    assert build_branch_prompt("B", "only this", replace_instructions=True) == wrap + "only this"
    assert build_branch_prompt("B", "", replace_instructions=True) == wrap + BRANCH_SUMMARY_PROMPT


def test_markers() -> None:
    assert SPLIT_TURN_SEPARATOR == "\n\n---\n\n**Turn Context (split turn):**\n\n"
    assert NO_PRIOR_HISTORY == "No prior history."
    assert BRANCH_SUMMARY_PREAMBLE == (
        "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
    )
    assert merge_split_turn("H", "P") == "H" + SPLIT_TURN_SEPARATOR + "P"

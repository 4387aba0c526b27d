"""Summarization prompts.

The guidance wording is this project's own. What summaries and their
consumers depend on is kept byte-identical to Pi: the section headings and
their order (Pi 1.6.0's for the turn prefix), the quoted first and closing
lines of the history, update and branch prompts (the turn-prefix prompt,
rewritten in 1.6.0, is ours throughout), the ``<conversation>`` and
``<previous-summary>`` wrappers, ``"\\n\\nAdditional focus: "`` for custom
instructions, the split-turn merge separator, ``"No prior history."`` and the
branch-summary preamble.

Invariants:

* ``build_summary_prompt`` = ``"<conversation>\\n" + serialized +
  "\\n</conversation>\\n\\n"`` [+ ``"<previous-summary>\\n" + previous +
  "\\n</previous-summary>\\n\\n"`` when ``previous`` is non-empty] + the
  update prompt (with a previous summary) or the initial prompt
  [+ ``"\\n\\nAdditional focus: " + instructions`` when non-empty].
* ``build_turn_prefix_prompt`` = ``"# Conversation\n" + serialized +
  "\n\n# Instructions\n"`` + the turn-prefix prompt [+ ``"\n\nAdditional
  focus: " + instructions`` when non-empty] (Pi 1.6.0's shape; no previous
  summary).
* ``build_branch_prompt``: non-empty instructions replace the branch prompt
  when ``replace_instructions`` is set, else they are appended as above.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

SUMMARIZATION_SYSTEM_PROMPT = (
    "You are a context summarization assistant. You are given the transcript of a "
    "session between a user and an AI assistant, and you write the structured "
    "summary that the request asks for, in exactly the requested format.\n\n"
    "The transcript is material to summarize, not a conversation you are part of: "
    "do not continue it, do not answer questions that appear in it, and reply with "
    "nothing but the summary."
)

_EXACT_FORMAT = "Use this EXACT format:"
_CLOSING = "Keep each section concise. Preserve exact file paths, function names, and error messages."

SUMMARIZATION_PROMPT = f"""\
The messages above are a conversation to summarize. Create a structured context \
checkpoint summary that another LLM will use to continue the work.

{_EXACT_FORMAT}

## Goal
[The goal or goals the user is working towards; list several if the session moved between tasks.]

## Constraints & Preferences
- [Requirements, limits or preferences the user stated]
- [Write "(none)" when there were none]

## Progress
### Done
- [x] [Finished work and changes]

### In Progress
- [ ] [Work under way right now]

### Blocked
- [Anything stopping progress, if present]

## Key Decisions
- **[Decision]**: [Why it was taken, in a few words]

## Next Steps
1. [What comes next, in order]

## Critical Context
- [Data, examples or references the next model needs to carry on]
- [Write "(none)" when nothing applies]

{_CLOSING}"""

UPDATE_SUMMARIZATION_PROMPT = f"""\
The messages above are NEW conversation messages to incorporate into the existing \
summary provided in <previous-summary> tags.

Revise that summary so it also covers the new messages:
- Keep everything the previous summary already records
- Add the progress, decisions and context that the new messages bring
- Move items from "In Progress" to "Done" once they are finished
- Bring "Next Steps" up to date with what has been achieved
- Keep file paths, function names and error messages exactly as written
- Drop an item only when it no longer matters

{_EXACT_FORMAT}

## Goal
[The earlier goals, plus any new ones the work grew into]

## Constraints & Preferences
- [The earlier constraints, plus newly stated ones]

## Progress
### Done
- [x] [Earlier finished items together with newly finished ones]

### In Progress
- [ ] [Current work, updated to the latest state]

### Blocked
- [Blockers still in force; leave out resolved ones]

## Key Decisions
- **[Decision]**: [Why it was taken] (keep the earlier decisions too)

## Next Steps
1. [What comes next given where things stand]

## Critical Context
- [Earlier important context, plus anything new that is needed]

{_CLOSING}"""

TURN_PREFIX_SUMMARIZATION_PROMPT = """\
The messages above are the earlier part of a conversation that is still going on. \
The messages that follow them are kept separately; you do not need to reconstruct them.

Write a short checkpoint of what the user asked for and of the progress shown above. \
It will be placed in front of the later messages so that the conversation can carry on \
with the context it needs.

## Original Request
[What the user asked for at the start of this turn]

## Progress So Far
- [Decisions made and work done in the messages above]

## Context Needed to Continue
- [Facts, files and state that the later messages depend on]

Summarize only what the messages above explicitly contain. Do not guess at, invent or \
recreate the messages that come later."""

BRANCH_SUMMARY_PROMPT = f"""\
Create a structured summary of this conversation branch for context when returning later.

{_EXACT_FORMAT}

## Goal
[What the user set out to do on this branch]

## Constraints & Preferences
- [Requirements, limits or preferences that came up]
- [Write "(none)" when there were none]

## Progress
### Done
- [x] [Finished work and changes]

### In Progress
- [ ] [Work begun but left unfinished]

### Blocked
- [Anything that stopped progress, if present]

## Key Decisions
- **[Decision]**: [Why it was taken, in a few words]

## Next Steps
1. [What should happen to carry this work on]

{_CLOSING}"""

BRANCH_SUMMARY_PREAMBLE = (
    "The user explored a different conversation branch before returning here.\nSummary of that exploration:\n\n"
)
SPLIT_TURN_SEPARATOR = "\n\n---\n\n**Turn Context (split turn):**\n\n"
NO_PRIOR_HISTORY = "No prior history."
ADDITIONAL_FOCUS = "\n\nAdditional focus: "


Conversation: TypeAlias = str | Sequence[str]
"""A serialized conversation: the text, or its pieces, which stand for the pieces joined with blank lines."""


def _pieces(serialized: Conversation) -> tuple[str, ...]:
    """``serialized`` as pieces whose concatenation is its text (a big text is never copied whole)."""
    if isinstance(serialized, str):
        return (serialized,)
    return tuple(piece for i, part in enumerate(serialized) for piece in (("\n\n", part) if i else (part,)))


def _conversation(serialized: Conversation, *after: str) -> str:
    """``serialized`` in its tags, then ``after``: one string built once (the text may be most of a file)."""
    return "".join(("<conversation>\n", *_pieces(serialized), "\n</conversation>\n\n", *after))


def build_summary_prompt(
    serialized: Conversation,
    previous_summary: str | None = None,
    custom_instructions: str | None = None,
) -> str:
    """The history-summary request text (initial or update prompt)."""
    instructions = UPDATE_SUMMARIZATION_PROMPT if previous_summary else SUMMARIZATION_PROMPT
    if custom_instructions:
        instructions += ADDITIONAL_FOCUS + custom_instructions
    previous = f"<previous-summary>\n{previous_summary}\n</previous-summary>\n\n" if previous_summary else ""
    return _conversation(serialized, previous, instructions)


def build_turn_prefix_prompt(serialized: Conversation, custom_instructions: str | None = None) -> str:
    """The request text that summarizes the kept turn's cut-off beginning."""
    focus = (ADDITIONAL_FOCUS, custom_instructions) if custom_instructions else ()
    return "".join(("# Conversation\n", *_pieces(serialized), "\n\n# Instructions\n", TURN_PREFIX_SUMMARIZATION_PROMPT,
                    *focus))


def build_branch_prompt(
    serialized: Conversation,
    custom_instructions: str | None = None,
    replace_instructions: bool = False,
) -> str:
    """The branch-summary request text; instructions append, or replace when asked."""
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = BRANCH_SUMMARY_PROMPT + ADDITIONAL_FOCUS + custom_instructions
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    return _conversation(serialized, instructions)


def merge_split_turn(history_summary: str, turn_prefix_summary: str) -> str:
    """One compaction summary from the history part and the turn-prefix part."""
    return history_summary + SPLIT_TURN_SEPARATOR + turn_prefix_summary

"""Scripted loopback answers: an incomplete summary, one that copies the previous constraints, one with other
headings, one of a chosen size.

Each is a callable of the request body (``Fault.reply``). The turn-prefix
request of a split turn asks for other sections than the history request;
:func:`asks_turn_prefix` tells them apart the way the loopback's default answer does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.loopback_provider import default_reply, first_user_text

INCOMPLETE = (
    "## Goal\n- Work on the exporter.\n\n## Constraints & Preferences\n- (none)\n\n"
    "## Progress\n### Done\n- [x] Edited some code\n\n### In Progress\n- [ ] Continue the work\n\n"
    "### Blocked\n- (none)\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. Continue\n\n"
    "## Critical Context\n- (none)\n"
)
INCOMPLETE_PREFIX = (
    "## Original Request\n- The user asked for more changes.\n\n## Progress So Far\n- Some files were edited.\n\n"
    "## Context Needed to Continue\n- (none)\n"
)
OTHER_HEADINGS = (
    "# Where things stand\n\n**Objective.** Move the exporter work forward.\n\n"
    "**Work so far.**\n* code was read and edited\n* tests were run\n\n"
    "**Still to do.**\n* carry on with the latest request\n"
)


def asks_turn_prefix(body: Any) -> bool:
    """True for the turn-prefix request of a split turn."""
    return default_reply(body).startswith("## Original Request")


def incomplete(body: Any) -> str:
    """A well-formed summary that leaves out every file, constraint, error and the request."""
    return INCOMPLETE_PREFIX if asks_turn_prefix(body) else INCOMPLETE


def copies_constraints(body: Any) -> str:
    """Like :func:`incomplete`, but its Constraints section is the previous summary's, copied as it stands
    (marks and all) — what a model that keeps the list it was given writes."""
    if asks_turn_prefix(body):
        return INCOMPLETE_PREFIX
    user = first_user_text(body)
    previous = user.partition("<previous-summary>\n")[2].partition("\n</previous-summary>")[0]
    found = re.search(r"^## Constraints & Preferences\n(.*?)(?=^#{1,2} |^---|\Z)", previous, re.M | re.S)
    items = found.group(1).strip() if found else ""
    return INCOMPLETE.replace("## Constraints & Preferences\n- (none)", "## Constraints & Preferences\n" + items) \
        if items else INCOMPLETE


def other_headings(body: Any) -> str:
    """A sensible summary whose headings are not ours."""
    return OTHER_HEADINGS


def padded(tokens: int) -> Callable[[Any], str]:
    """An answer of about ``tokens`` tokens (characters / 4) to the history request; a short turn prefix."""
    line = "- a detail worth keeping, repeated at length\n"

    def reply(body: Any) -> str:
        if asks_turn_prefix(body):
            return INCOMPLETE_PREFIX
        return INCOMPLETE + "\n" + line * max(1, (4 * tokens - len(INCOMPLETE)) // len(line))

    return reply

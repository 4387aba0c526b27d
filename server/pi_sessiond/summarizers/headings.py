"""Heading normalization: a summary with other headings becomes one with ours.

``normalize(text, headings)`` maps the headings an answer used to the
required ones (case, level, numbering, emphasis, ``&``/``and`` and common
synonyms ignored), turns any other heading into a bold line inside the
section before it, and returns the sections in the required order, each
required heading present (``(none)`` under one the answer lacked).

Invariants:

* Never fails and never drops text: every non-heading line of the answer is
  in the output, in its order within its section; text before the first
  heading stays first.
* Idempotent: a normalized summary normalizes to itself.
* ``headings == ()`` (a format of the user's own): the text is returned as is.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.+?)\s*#*\s*$|^\s{0,3}\*\*([^*]{2,60})\*\*:?\s*$")
_ALIASES = {
    "## Goal": ("goal", "goals", "objective", "objectives", "task", "original goal", "user goal", "purpose"),
    "## Constraints & Preferences": (
        "constraints and preferences", "constraints", "preferences", "requirements", "user preferences",
        "constraints and requirements", "rules",
    ),
    "## Progress": ("progress", "status", "current status", "progress so far"),
    "### Done": ("done", "completed", "finished", "accomplished", "completed work", "what was done"),
    "### In Progress": ("in progress", "ongoing", "current work", "work in progress", "wip"),
    "### Blocked": ("blocked", "blockers", "blocking issues", "open issues", "problems", "issues"),
    "## Key Decisions": ("key decisions", "decisions", "decisions made", "design decisions"),
    "## Next Steps": ("next steps", "next", "todo", "to do", "todos", "remaining work", "open todos", "remaining"),
    "## Critical Context": (
        "critical context", "context", "important context", "key context", "notes", "important details",
        "important notes", "key facts",
    ),
    "## Original Request": ("original request", "request", "user request"),
    "## Progress So Far": ("progress so far", "early progress", "progress"),
    "## Context Needed to Continue": ("context needed to continue", "context to continue", "context needed"),
}


@attrs.frozen
class Normalized:
    """The normalized text and the required headings the answer did not have."""

    text: str
    added_headings: tuple[str, ...] = ()


def heading_key(title: str) -> str:
    """A heading's words for comparison: lower case, no numbering, emphasis, punctuation or emoji."""
    flat = title.lower().replace("&", " and ")
    flat = re.sub(r"^[\d.)\s]+", "", flat)
    return " ".join(re.sub(r"[^\w\s]", " ", flat).split())


def _lookup(headings: Sequence[str]) -> dict[str, str]:
    """Comparison key -> required heading, for the required headings only (their own words first)."""
    table: dict[str, str] = {}
    for heading in headings:
        table.setdefault(heading_key(heading.lstrip("# ")), heading)
    for heading in headings:
        for alias in _ALIASES.get(heading, ()):
            table.setdefault(alias, heading)
    return table


def normalize(text: str, headings: Sequence[str]) -> Normalized:
    """``text`` with exactly the required ``headings``, in order (module invariants)."""
    if not headings:
        return Normalized(text)
    table = _lookup(headings)
    preamble: list[str] = []
    bodies: dict[str, list[str]] = {}
    current = preamble
    for line in text.splitlines():
        match = _HEADING.match(line)
        title = (match.group(2) or match.group(3)) if match else None
        target = table.get(heading_key(title)) if title else None
        if target is not None:
            current = bodies.setdefault(target, [])
        elif title is not None and match is not None and match.group(1):
            current.append(f"**{title.strip('* ')}**")
        else:
            current.append(line)
    return Normalized(_render(preamble, bodies, headings), tuple(h for h in headings if h not in bodies))


def _render(preamble: list[str], bodies: dict[str, list[str]], headings: Sequence[str]) -> str:
    parts = ["\n".join(preamble).strip()] if "\n".join(preamble).strip() else []
    for n, heading in enumerate(headings):
        body = "\n".join(bodies.get(heading, [])).strip("\n")
        has_children = n + 1 < len(headings) and headings[n + 1].startswith("###") and heading.startswith("## ")
        if not body.strip() and not has_children:
            body = "(none)"
        parts.append(heading + ("\n" + body if body.strip() else ""))
    return "\n\n".join(parts)


def section_bounds(text: str, heading: str) -> tuple[int, int] | None:
    """``(start, end)`` of the body under ``heading`` (a line of its own) in ``text``, or ``None``."""
    match = re.search(rf"^{re.escape(heading)}[ \t]*$", text, re.M)
    if match is None:
        return None
    following = re.compile("^#{1," + str(heading.count("#")) + "} ", re.M).search(text, match.end())
    return match.end(), following.start() if following else len(text)

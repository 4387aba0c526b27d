"""The offline summary's sections: the size bound that drops what may go (and counts it), and the rendering.

Invariants:
- Items leave by section, oldest (or newest, for ``newest_first``) first; a user
  direction never does, and with ``spare`` neither do the last error and the
  latest request. Every item left out is counted in the section's
  ``… N more … not listed (size bound)`` line, carried from one summary to the next.
- Goals, constraints, open TODOs, the last error and the last request are trimmed
  only once nothing else is left.
"""

from __future__ import annotations

import re

import attrs

from pi_sessiond.summarizers.base import ProgressCallback
from pi_sessiond.summarizers.offline_merge import STOPWORDS

CHARS_PER_TOKEN = 4

# key, heading, item marker
SPECS = {
    "goal": ("## Goal", "- "),
    "constraints": ("## Constraints & Preferences", "- "),
    "done": ("### Done", "- [x] "),
    "in_progress": ("### In Progress", "- [ ] "),
    "blocked": ("### Blocked", "- "),
    "decisions": ("## Key Decisions", "- "),
    "next": ("## Next Steps", "1. "),
    "critical": ("## Critical Context", "- "),
    "request": ("## Original Request", "> "),
    "early": ("## Progress So Far", "- "),
    "suffix": ("## Context Needed to Continue", "- "),
}
@attrs.define
class Section:
    key: str
    items: list[str]
    newest_first: bool = False
    left_out: int = 0  # items the size bound took out (an earlier summary's count included)


_COUNTED = re.compile(r"^… (\d+) more .+ not listed \(size bound\)$")
_NAMES = {"goal": "goals", "done": "done items", "in_progress": "items in progress", "blocked": "blocked items",
          "decisions": "decisions", "next": "next steps", "critical": "context items", "early": "earlier steps",
          "suffix": "context items", "request": "request lines"}


def count_line(section: Section) -> str:
    return f"… {section.left_out} more {_NAMES.get(section.key, 'items')} not listed (size bound)"


def take_counts(sections: list[Section]) -> None:
    """An earlier summary's count lines become each section's running count."""
    for section in sections:
        counted = [m for item in section.items if (m := _COUNTED.match(item))]
        section.left_out += sum(int(m.group(1)) for m in counted)
        section.items = [item for item in section.items if not _COUNTED.match(item)]


def focus_words(instructions: str | None) -> frozenset[str]:
    words = re.findall(r"[\w./-]{4,}", (instructions or "").lower())
    return frozenset(w for w in words if w not in STOPWORDS)


def matches(item: str, focus: frozenset[str]) -> bool:
    lowered = item.lower()
    return any(word in lowered for word in focus)


_KEPT_LONGEST = ("goal", "constraints", "next", "request")
_KEPT_ITEMS = ("Last error:", "Last user request", "Latest user request", "Earlier split-turn context:")
_NEVER_DROPPED = _KEPT_ITEMS[:3]


def _protected(section: Section, item: str) -> bool:
    """Trimmed only when nothing else is left: goals, constraints, open TODOs, the last error and request."""
    return section.key in _KEPT_LONGEST or item.startswith(_KEPT_ITEMS)


def _droppable(section: Section, item: str, keep: bool, spare: bool) -> bool:
    """Protected items go only in the second pass (``keep`` false); user directions never go (a hard fact:
    their own bound counts what it leaves out); with ``spare`` the last error and the latest request never go."""
    if section.key == "constraints":
        return False
    return not (spare and item.startswith(_NEVER_DROPPED)) and not (keep and _protected(section, item))


def fit(sections: list[Section], budget: int, focus: frozenset[str], *, spare: bool) -> None:
    """Drop the oldest item of the longest section until the text fits (headings stay): narrative first
    (done, decisions, notes), then goals, constraints and open TODOs (the first goal last of all); the last
    error and the latest request stay unless ``spare`` is false (the hard ``max_tokens`` bound)."""
    sizes = [_part_size(section) for section in sections]
    for keep in (True, False):
        while sum(sizes) + 2 * (len(sections) - 1) > budget:
            candidates = [s for s in sections if _order(s, keep, spare)]
            if not candidates:
                break
            section = max(candidates, key=lambda s: sum(len(i) for i in s.items))
            order = _order(section, keep, spare)
            plain = [i for i in order if not matches(section.items[i], focus)]
            del section.items[(plain or order)[0]]
            section.left_out += 1
            sizes[sections.index(section)] = _part_size(section)


def _order(section: Section, keep: bool, spare: bool) -> list[int]:
    """The indexes of the items of ``section`` that may go, first to go first (the task, the first goal, never)."""
    indexes = range(len(section.items) - 1, -1, -1) if section.newest_first else range(len(section.items))
    order = [i for i in indexes if _droppable(section, section.items[i], keep, spare)]
    return [i for i in order if i != 0] if section.key == "goal" else order


def _part_size(section: Section) -> int:
    """The length of ``section`` as :func:`_render` writes it (without the blank line between parts)."""
    return len(_render_section(section)) + (len("## Progress\n") if section.key == "done" else 0)


def render(sections: list[Section], progress: ProgressCallback | None) -> str:
    parts: list[str] = []
    for section in sections:
        text = _render_section(section)
        parts.append("## Progress\n" + text if section.key == "done" else text)
        if progress is not None:
            progress(max(2, len("\n\n".join(parts)) // CHARS_PER_TOKEN))
    return "\n\n".join(parts)


def _render_section(section: Section) -> str:
    heading, marker = SPECS[section.key]
    items = section.items + ([count_line(section)] if section.left_out else [])
    if not items:
        return heading + "\n(none)"
    lines = [heading]
    if marker == "> ":
        return "\n".join(lines + [("> " + line).rstrip() for item in items for line in item.split("\n")])
    for n, item in enumerate(items, 1):
        prefix = f"{n}. " if marker == "1. " else marker
        first, *rest = item.split("\n")
        lines.append(prefix + first)
        lines += [("  " + line).rstrip() for line in rest]
    return "\n".join(lines)

"""Reading a summary of ours back into its items, by section.

``parse_summary(text)`` returns the items of a structured summary (the
history/branch format of :mod:`pi_sessiond.compaction.prompts`) keyed by
section (``goal``, ``constraints``, ``done``, ``in_progress``, ``blocked``,
``decisions``, ``next``, ``critical``); ``split_turn_part(text)`` the
sections of the turn-prefix part that follows Pi's split-turn separator
(``request``, ``early``, ``suffix``).

Invariants:

* ``<read-files>``/``<modified-files>`` blocks are dropped; an item keeps its
  indented continuation lines (dedented by two spaces); ``(none)`` is no item.
* An unstructured summary is one quoted item under ``earlier`` (its goal and
  constraint sections lifted into ours); a split-turn part is one quoted
  item of ``critical`` (``Earlier split-turn context:``).
* Pure and deterministic.
"""

from __future__ import annotations

import re

from pi_sessiond.compaction.prompts import NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR

HEADING_KEYS = {
    "## Goal": "goal",
    "## Constraints & Preferences": "constraints",
    "### Done": "done",
    "### In Progress": "in_progress",
    "### Blocked": "blocked",
    "## Key Decisions": "decisions",
    "## Next Steps": "next",
    "## Critical Context": "critical",
    "## Original Request": "request",
    "## Progress So Far": "early",
    "## Context Needed to Continue": "suffix",
}
SPLIT_TURN_TITLE = "Earlier split-turn context:"
_HEADING_KEYS = HEADING_KEYS
_FILE_TAGS = re.compile(r"\n*<(read-files|modified-files)>\n.*?\n</\1>", re.S)
_ITEM = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)(.*)$")


def split_turn_part(text: str) -> dict[str, list[str]]:
    """The sections of the turn-prefix part of ``text`` (after the split-turn separator), else ``{}``."""
    _, sep, turn = _FILE_TAGS.sub("", text).partition(SPLIT_TURN_SEPARATOR.strip("\n"))
    return parse_sections(turn) if sep else {}


def parse_sections(text: str) -> dict[str, list[str]]:
    """The items under every heading of ours in ``text``, by key (other text ignored)."""
    sections: dict[str, list[str]] = {}
    items: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("#"):
            key = HEADING_KEYS.get(line.strip())
            items = sections.setdefault(key, []) if key else None
        elif items is not None:
            _add_line(items, line)
    return {k: [i for i in v if i.strip() not in ("(none)", "")] for k, v in sections.items()}


def parse_summary(text: str) -> dict[str, list[str]]:
    """The items of a summary by section key; an unstructured one under ``earlier``.

    A summary is structured when it has ``## Goal`` and ``## Progress`` and no
    ``## `` heading of its own. A split-turn part is kept as one quoted item.
    """
    text = _FILE_TAGS.sub("", text).strip()
    history, _, turn = text.partition(SPLIT_TURN_SEPARATOR.strip("\n"))
    sections = _parse_structured(history.strip())
    if sections is None and history.strip() in ("", NO_PRIOR_HISTORY):
        sections = {}  # a split turn without history before it: nothing earlier to carry
    elif sections is None:
        sections = {"earlier": [_quote("Earlier context (previous summary, kept verbatim):", history)]}
        sections.update(_lift(history))
    if turn.strip():
        sections.setdefault("critical", []).append(_quote(SPLIT_TURN_TITLE, turn))
    return sections


def _lift(text: str) -> dict[str, list[str]]:
    """Goal and preference sections of a free-form summary, lifted into ours."""
    lifted: dict[str, list[str]] = {}
    for heading, body in re.findall(r"^## (.+)\n+((?:(?!#).*\n?)*)", text, re.M):
        key = "goal" if heading.strip() == "Goal" else None
        key = "constraints" if re.search(r"preference|constraint", heading, re.I) else key
        if key is not None:
            lines = [re.sub(r"^[-*+•]\s+|^\d+[.)]\s+", "", ln.strip()) for ln in body.splitlines()]
            lifted.setdefault(key, []).extend(ln for ln in lines if ln)
    return lifted


def _quote(title: str, text: str) -> str:
    return title + "\n" + "\n".join(("> " + line).rstrip() for line in text.strip().splitlines())


def _parse_structured(text: str) -> dict[str, list[str]] | None:
    top = re.findall(r"^## .*$", text, re.M)
    known = all(h in _HEADING_KEYS or h == "## Progress" for h in top)
    if "## Goal" not in top or "## Progress" not in top or not known:
        return None
    return parse_sections(text)


def _add_line(items: list[str], line: str) -> None:
    if not line.strip():
        return
    bullet = _ITEM.match(line)
    if bullet:
        items.append(bullet.group(1))
    elif line.startswith(" ") and items:
        items[-1] += "\n" + (line[2:] if line.startswith("  ") else line[1:])
    else:
        items.append(line.strip())

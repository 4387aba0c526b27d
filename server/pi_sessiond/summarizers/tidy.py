"""Tidying an answer before the gate adds to it: no stale copies, no duplicates, whoever wrote them.

``tidy(text, facts)`` returns ``text`` without the list items (with their
indented continuation lines) of the Goal, Constraints & Preferences, Key
Decisions and Next Steps sections that

* repeat an earlier item of the same section (by identity, :func:`~.revise.key`);
* name a direction or decision a later one revised (``facts.replaced``), or
  carry the superseded mark while the range revised nothing of that name
  (a mark copied from an earlier summary: it lasts one compaction).

Invariants: every other line is kept as it stands, in order; headings are
never touched; tidying a tidy text changes nothing; pure and deterministic.
"""

from __future__ import annotations

import re

from pi_sessiond.summarizers.facts import Facts
from pi_sessiond.summarizers.revise import SUPERSEDED, key

_SECTIONS = ("## Goal", "## Constraints & Preferences", "## Key Decisions", "## Next Steps")
_ITEM = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)(.*)$")


def tidy(text: str, facts: Facts) -> str:
    """``text`` without stale or repeated items (module invariants)."""
    gone = {key(item) for item in facts.replaced}
    marked = {key(item) for item in (*facts.constraints, *facts.decisions) if item.endswith(SUPERSEDED)}
    out: list[str] = []
    seen: set[str] = set()
    section = ""
    dropping = False
    for line in text.split("\n"):
        if line.startswith("#"):
            section, seen, dropping = line.strip(), set(), False
            out.append(line)
            continue
        if dropping and line.startswith(" ") and line.strip():
            continue  # a continuation line of a dropped item
        dropping = False
        item = _ITEM.match(line) if section in _SECTIONS else None
        if item:
            k = key(item.group(1))
            stale = item.group(1).rstrip().endswith(SUPERSEDED.strip()) and k not in marked
            if k and (k in seen or k in gone or stale):
                dropping = True
                continue
            seen.add(k)
        out.append(line)
    return "\n".join(out)

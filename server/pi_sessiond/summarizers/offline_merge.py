"""The update rule of the offline summarizer: a previous summary merged with the new range.

Invariants (iterative, not additive):

* Every item of the previous summary is kept, except: one last error, one
  latest request and one identifier line (the new range's, or the newest
  earlier one); an In Progress item whose file was now changed moves to
  Done, a Blocked one to Done as resolved, and a Blocked one that a new
  failure of the same sort restates goes.
* The previous summary's split-turn part is folded into the sections, not
  quoted: its Progress So Far under Done; its directions, decisions, steps,
  error and request are carried into their own sections by :mod:`.carry`;
  the rest of its context (what was under way inside that turn) is over.
* Constraints and decisions by identity (:func:`~.revise.merge_items`): the
  same item once, an earlier one a new one revises marked superseded, one
  marked by an earlier range dropped; the gate's ``[gate]`` marks are stripped.
* Order: previous items first, new ones after (Next Steps: new first);
  exact duplicates (whitespace aside) once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from pi_sessiond.summarizers.facts import SUPERSEDED
from pi_sessiond.summarizers.gate import MARK
from pi_sessiond.summarizers.revise import merge_items
from pi_sessiond.summarizers.summary_parse import SPLIT_TURN_TITLE, parse_sections

CURRENT = " (current)"
STOPWORDS = frozenset(
    {"about", "after", "also", "and", "are", "but", "for", "from", "have", "into", "more", "only", "that", "the"}
    | {"then", "this", "what", "when", "with"}
)


def merge(old: dict[str, list[str]], new: dict[str, list[str]], done_paths: Sequence[str]) -> dict[str, list[str]]:
    """The previous summary ``old`` updated by the new range's sections ``new`` (module invariants)."""
    old = {key: [item.removeprefix(MARK) for item in items] for key, items in old.items()}
    old = _folded(old)
    still, finished = _split_done(old.get("in_progress", []), done_paths)
    blocked, resolved = _split_done(old.get("blocked", []), done_paths)
    goals = [g.removesuffix(CURRENT) for g in old.get("goal", [])]
    merged = {
        "goal": _union(goals, new["goal"]),
        "done": _union(old.get("done", []), finished, [f"Resolved: {r}" for r in resolved], new["done"]),
        "in_progress": _union(still, new["in_progress"]),
        "blocked": _union(_superseded_dropped(blocked, new["blocked"]), new["blocked"]),
        "next": _union(new["next"], old.get("next", [])),
        "critical": _union(old.get("earlier", []), _singletons_replaced(old.get("critical", []), new["critical"]),
                           new["critical"]),
    }
    for key in ("constraints", "decisions"):
        merged[key] = merge_items(old.get(key, []), new[key])
    return merged


def _folded(old: dict[str, list[str]]) -> dict[str, list[str]]:
    """``old`` with its quoted split-turn parts folded into Done and Critical Context (module invariants)."""
    critical = old.get("critical", [])
    quoted = [item for item in critical if item.startswith(SPLIT_TURN_TITLE)]
    if not quoted:
        return old
    out = {**old, "critical": [item for item in critical if not item.startswith(SPLIT_TURN_TITLE)]}
    for item in quoted:
        turn = parse_sections("\n".join(ln.removeprefix(">").removeprefix(" ") for ln in item.splitlines()[1:]))
        out["done"] = [*out.get("done", []), *turn.get("early", [])]
    return out


_SINGLETONS = (
    ("Earlier split-turn context:",),
    ("Last error:", "Error:"),
    ("Last user request", "Latest user request"),
    ("Identifiers",),
)


def _singletons_replaced(old: list[str], new: list[str]) -> list[str]:
    """Old items of a one-of-a-kind sort (last error, latest request, identifiers) go when the new range has one."""
    replaced = [kinds for kinds in _SINGLETONS if any(item.startswith(kinds) for item in new)]
    kept = [item for item in old if not any(item.startswith(kinds) for kinds in replaced)]
    # Of the one-of-a-kind items that stay, only the newest of each kind.
    return [item for n, item in enumerate(kept) if not _later_of_kind(item, kept[n + 1 :])]


def _later_of_kind(item: str, later: list[str]) -> bool:
    kinds = next((k for k in _SINGLETONS if item.startswith(k)), None)
    return kinds is not None and any(other.startswith(kinds) for other in later)


def _words(item: str) -> set[str]:
    return {w for w in re.findall(r"\w{3,}", item.lower()) if w not in STOPWORDS}


def superseded_marked(old: list[str], new: list[str]) -> list[str]:
    """Old items a new one restates (3/5 of the old item's significant words, at least two) are marked.

    Marked, not dropped: word overlap cannot tell a changed preference from two
    similar ones, and a wrongly dropped requirement is worse than a stale one.
    """
    fresh = [_words(item) for item in new]

    def superseded(item: str) -> bool:
        words = _words(item)
        return any(len(words & other) >= max(2, 0.6 * len(words)) for other in fresh)

    return [item + SUPERSEDED if superseded(item) and not item.endswith(SUPERSEDED) else item for item in old]


def _superseded_dropped(old: list[str], new: list[str]) -> list[str]:
    """Old blocked items a new failure of the same sort restates are gone (one current error of a kind)."""
    marked = superseded_marked(old, new)
    return [item for item, was in zip(marked, old, strict=True) if item == was or was.endswith(SUPERSEDED)]


def _split_done(items: Sequence[str], done_paths: Sequence[str]) -> tuple[list[str], list[str]]:
    names = {p for p in done_paths} | {p.rsplit("/", 1)[-1] for p in done_paths}
    done = [i for i in items if any(n in i for n in names)]
    return [i for i in items if i not in done], done


def _union(*groups: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for group in groups:
        for item in group:
            seen.setdefault(" ".join(item.split()), item)
    return list(seen.values())

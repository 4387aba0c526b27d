"""String-matching the written entries against the planted facts.

Matching: both sides are NFKC-normalized, case-folded, quotes unified, Markdown
backticks dropped and whitespace collapsed; a fact is kept when
every one of its needles occurs in the entry's text (its ``summary`` plus every
string in its ``details``) and what it ``replaced`` (an earlier preference) is
gone from the summary or said to be replaced on every line naming it
(:data:`REPLACED_MARK`).

In range: a compaction summarizes the path before its ``firstKeptEntryId``; a
branch summary the abandoned entries (their facts were re-attached to it). Of
``lastRequest`` and ``lastError`` only the last in range counts; the other
classes count once per distinct needle set.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tests.fidelity.sessions import CLASSES, Fact

_QUOTES = str.maketrans({c: '"' for c in "„“”«»「」『』"} | {c: "'" for c in "‘’‚"})
LAST = ("lastRequest", "lastError")
# How a summary may say that an item no longer holds (any wording of these).
REPLACED_MARK = re.compile(r"supersed|replaced|no longer (?:holds|applies)|overridden|obsolete", re.I)


def normalize(text: str) -> str:
    """The form both a needle and a summary are compared in."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES).replace("`", "")
    return " ".join(text.casefold().split())


def entry_text(entry: dict[str, Any]) -> str:
    """``summary`` plus every string inside ``details``, normalized."""
    parts = [str(entry.get("summary", ""))]
    stack: list[Any] = [entry.get("details")]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            parts.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return normalize("\n".join(parts))


def tokens(text: str) -> int:
    """Pi's estimate: a token per 4 characters, rounded up."""
    return math.ceil(len(text) / 4)


def in_range(facts: Sequence[Fact], entry_ids: Sequence[str]) -> list[Fact]:
    """The facts one entry should carry: see the module docstring."""
    order = {eid: n for n, eid in enumerate(entry_ids)}
    inside = sorted((f for f in facts if f.entry_id in order), key=lambda f: order[f.entry_id])
    out: dict[tuple[str, tuple[str, ...]], Fact] = {}
    for cls in LAST:
        last = [f for f in inside if f.cls == cls]
        if last:
            out[(cls, ())] = last[-1]
    for fact in inside:
        if fact.cls not in LAST:
            out.setdefault((fact.cls, fact.needles), fact)
    return list(out.values())


def summarized_ids(path_ids: Sequence[str], entry: dict[str, Any]) -> list[str]:
    """The path before ``firstKeptEntryId`` (a branch summary: just its own id)."""
    if entry["type"] == "branch_summary":
        return [entry["id"]]
    first = entry["firstKeptEntryId"]
    return list(path_ids[: path_ids.index(first)]) if first in path_ids else list(path_ids)


@dataclass(frozen=True)
class Hit:
    """One scored fact."""

    summarizer: str
    scenario: str
    round: int
    fact: Fact
    kept: bool


def score(summarizer: str, scenario: str, round_: int, facts: Sequence[Fact], entry: dict[str, Any] | None,
          ids: Sequence[str]) -> list[Hit]:
    """Hits of one written entry (``None``: nothing was written, every fact is lost)."""
    text = entry_text(entry) if entry else ""
    lines = [normalize(line) for line in str(entry.get("summary", "")).splitlines()] if entry else []
    return [Hit(summarizer, scenario, round_, f, bool(entry) and all(normalize(n) in text for n in f.needles)
                and all(replaced_or_gone(r, lines) for r in f.replaced))
            for f in in_range(facts, ids)]


def replaced_or_gone(needle: str, lines: Sequence[str]) -> bool:
    """Whether every line naming ``needle`` (normalized lines of a summary) says it was replaced."""
    flat = normalize(needle)
    return all(REPLACED_MARK.search(line) for line in lines if flat in line)


def recall(hits: Iterable[Hit], key: Any) -> dict[Any, tuple[int, int]]:
    """``{key(hit): (kept, total)}``."""
    table: dict[Any, list[int]] = defaultdict(lambda: [0, 0])
    for hit in hits:
        row = table[key(hit)]
        row[0] += hit.kept
        row[1] += 1
    return {k: (v[0], v[1]) for k, v in table.items()}


def by_class(hits: Iterable[Hit]) -> dict[str, tuple[int, int]]:
    """Recall per fact class, in :data:`CLASSES` order."""
    table = recall(hits, lambda h: h.fact.cls)
    return {cls: table[cls] for cls in CLASSES if cls in table}


def by_language(hits: Iterable[Hit], cls: str) -> dict[str, tuple[int, int]]:
    """Recall of one class per language."""
    return dict(sorted(recall((h for h in hits if h.fact.cls == cls), lambda h: h.fact.lang).items()))

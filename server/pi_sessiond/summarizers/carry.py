"""Carry-forward: the facts an earlier summary carried are facts of the next one too.

``carry_forward(facts, previous, messages)`` returns the range's hard facts
(:func:`~.facts.extract_facts`) joined with those of the earlier summaries
the new one replaces: the previous compaction's summary and every branch or
compaction summary inside the summarized range, oldest first. The gate then
requires them exactly like facts of the range, so nothing a summary once kept
is lost when a model (or a size bound) drops it at the next compaction.

Invariants:

* Read from our own section format (:func:`~.offline.parse_summary`; a
  free-form summary gives only its goal/constraint sections): the
  Constraints & Preferences items, the Key Decisions, the Next Steps (open
  TODOs), the backticked identifiers of the Critical Context identifier
  lines, its "Last error" and its latest request. ``[gate]`` marks are
  stripped.
* The later wins: a carried constraint or decision a newer one of the range
  restates is marked superseded (:func:`~.offline_merge.superseded_marked`);
  the carried last error only when the range has no error of its own, the
  carried request only when the range has no request.
* A carried TODO is dropped when it is ticked or names a file the range
  changed (done since). Bounded: at most ``TODOS_KEPT`` TODOs and
  ``CARRIED_IDENTIFIERS`` carried identifiers beyond the range's own.
* Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from pi_sessiond.summarizers.facts import Facts, dedupe
from pi_sessiond.summarizers.gate import MARK, SUPERSEDED
from pi_sessiond.summarizers.offline import parse_summary
from pi_sessiond.summarizers.offline_merge import superseded_marked
from pi_sessiond.summarizers.todos import is_ticked, names_changed_file

JsonDict = dict[str, Any]

TODOS_KEPT = 16
CARRIED_IDENTIFIERS = 20
CARRIED_ERROR = "(carried from the previous summary)"
_ERROR = ("Last error:", "Error:")
_REQUEST = ("Latest user request (verbatim):", "Last user request (verbatim):")
_TICK = re.compile(r"`([^`\n]{2,120})`")


@attrs.frozen
class Carried:
    """What one or more earlier summaries said, oldest first."""

    constraints: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    todos: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    last_error: str = ""
    last_request: str = ""


def earlier_summaries(previous: str | None, messages: Sequence[JsonDict]) -> list[str]:
    """The previous summary, then the branch/compaction summaries inside ``messages``, in order."""
    texts = [previous] if previous else []
    for msg in messages:
        if isinstance(msg, dict) and msg.get("role") in ("branchSummary", "compactionSummary"):
            summary = msg.get("summary")
            if isinstance(summary, str) and summary.strip():
                texts.append(summary)
    return texts


def read_summary(text: str) -> Carried:
    """The facts one summary of ours carries (module invariants)."""
    sections = {k: [_unmarked(i) for i in v] for k, v in parse_summary(text).items()}
    critical = sections.get("critical", [])
    errors = [i.split(":", 1)[1].strip() for i in critical if i.startswith(_ERROR)]
    requests = [_after_label(i, _REQUEST) for i in critical if i.startswith(_REQUEST)]
    ids = [m for i in critical if i.startswith("Identifiers") for m in _TICK.findall(i)]
    return Carried(
        constraints=tuple(sections.get("constraints", [])),
        decisions=tuple(sections.get("decisions", [])),
        todos=tuple(sections.get("next", [])),
        identifiers=tuple(ids),
        last_error=errors[-1] if errors else "",
        last_request=requests[-1] if requests else "",
    )


def _unmarked(item: str) -> str:
    return item.removeprefix(MARK).strip()


def _after_label(item: str, labels: tuple[str, ...]) -> str:
    label = next(lb for lb in labels if item.startswith(lb))
    return item[len(label) :].strip()


def combine(summaries: Iterable[str]) -> Carried:
    """The facts of several earlier summaries, oldest first; the later's singletons win."""
    out = Carried()
    for text in summaries:
        one = read_summary(text)
        out = Carried(
            constraints=(*superseded_marked(list(out.constraints), list(one.constraints)), *one.constraints),
            decisions=(*superseded_marked(list(out.decisions), list(one.decisions)), *one.decisions),
            todos=(*one.todos, *out.todos),
            identifiers=(*one.identifiers, *out.identifiers),
            last_error=one.last_error or out.last_error,
            last_request=one.last_request or out.last_request,
        )
    return out


def carry_forward(facts: Facts, previous: str | None, messages: Sequence[JsonDict]) -> Facts:
    """``facts`` of the range joined with those of the summaries it replaces (module invariants)."""
    texts = earlier_summaries(previous, messages)
    if not texts:
        return facts
    old = combine(texts)
    constraints = _later_wins(old.constraints, facts.constraints)
    decisions = _later_wins(old.decisions, facts.decisions)
    todos = [t for t in old.todos if not is_ticked(t) and not names_changed_file(t, facts.modified_files)]
    ids = dedupe([*facts.identifiers, *dedupe(i for i in old.identifiers if i not in facts.identifiers)
                  [:CARRIED_IDENTIFIERS]])
    error = facts.last_error
    if not error and old.last_error:
        error = old.last_error if old.last_error.startswith(CARRIED_ERROR) else f"{CARRIED_ERROR}\n{old.last_error}"
    return attrs.evolve(
        facts,
        constraints=tuple(constraints),
        decisions=tuple(decisions),
        todos=tuple(dedupe([*facts.todos, *todos])[:TODOS_KEPT]),
        identifiers=tuple(ids),
        last_error=error,
        last_request=facts.last_request or old.last_request,
    )


def _later_wins(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """``old`` (restated ones marked superseded) then ``new``, each once."""
    fresh = [n for n in new if n not in old]
    marked = superseded_marked([o.removesuffix(SUPERSEDED) for o in old], fresh)
    kept = [m if m.endswith(SUPERSEDED) or not o.endswith(SUPERSEDED) else o for m, o in zip(marked, old, strict=True)]
    return dedupe([*kept, *new])

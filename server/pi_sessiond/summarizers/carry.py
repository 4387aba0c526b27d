"""Carry-forward: the facts an earlier summary carried are facts of the next one too.

``carry_forward(facts, previous, messages)`` returns the range's hard facts
(:func:`~.facts.extract_facts`) joined with those of the earlier summaries
the new one replaces: the previous compaction's summary and every branch or
compaction summary inside the summarized range, oldest first. The gate then
requires them exactly like facts of the range, so nothing a summary once kept
is lost when a model (or a size bound) drops it at the next compaction.

Invariants:

* Read from our own section format (:mod:`.summary_parse`; a free-form
  summary gives only its goal/constraint sections): the
  Constraints & Preferences items, the Key Decisions, the Next Steps (open
  TODOs), the backticked identifiers of the Critical Context identifier
  lines, its "Last error" and its latest request (whose directions count as
  constraints: a summary names them once, in the verbatim request). A split-turn part (after
  Pi's separator, or quoted by an earlier merge) adds the requirements its
  Original Request quotes verbatim (``>`` lines: a model's own paraphrase is
  no user direction) and the labelled items of its Context Needed to
  Continue (``Constraint:``, ``Decision:``, ``Next:``, the error, request and
  identifier labels). ``[gate]`` marks are stripped.
* By identity, not position (:mod:`.revise`): an item said by several parts
  or summaries is one item, unmarked. Only a real revision marks a
  constraint or decision superseded: one of the range revising a carried
  one (kept, marked), or one of a newer part of the summary read (a
  split-turn part is newer than its history part) revising an older one.
  A carried item marked superseded is dropped and listed in
  ``Facts.replaced`` (the gate takes copies of it out); the carried
  last error only when the range has no error of its own, the carried
  request only when the range has no request and it says more than the
  directions carried anyway (else it would name them twice).
* Goals: the earlier Goal items, at most ``GOALS_KEPT`` (the first and the
  newest). A replaced latest request is not a goal (its directions are
  constraints already).
* Constraints, carried and new, stay within the size bound of
  :func:`~.facts.bounded` (only soft items go; what is left out is counted in
  the last item). Decisions: the newest ``DECISIONS_KEPT`` carried ones.
* A carried TODO is dropped when it is ticked or names a file the range
  changed (done since). Bounded: at most ``TODOS_KEPT`` TODOs and
  ``CARRIED_IDENTIFIERS`` carried identifiers beyond the range's own.
* Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.summarizers.cues import constraint_sentences
from pi_sessiond.summarizers.facts import SUPERSEDED, Facts, bounded, dedupe
from pi_sessiond.summarizers.gate import MARK
from pi_sessiond.summarizers.offline_merge import CURRENT
from pi_sessiond.summarizers.revise import dedupe_items, key, merge_items
from pi_sessiond.summarizers.summary_parse import SPLIT_TURN_TITLE, parse_sections, parse_summary, split_turn_part
from pi_sessiond.summarizers.todos import is_ticked, names_changed_file

TODOS_KEPT = 16
CARRIED_IDENTIFIERS = 20
GOALS_KEPT = 12
DECISIONS_KEPT = 16
EARLIER_REQUEST = "Earlier request (verbatim): "
CARRIED_ERROR = "(carried from the previous summary)"
_ERROR = ("Last error:", "Error:")
_REQUEST = ("Latest user request (verbatim):", "Last user request (verbatim):")
_TURN_LABELS = ("Constraint:", "Decision:", "Next:")
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
    goals: tuple[str, ...] = ()


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
    """The facts one summary of ours carries (module invariants), its split-turn parts included."""
    sections = {k: [_unmarked(i) for i in v] for k, v in parse_summary(text).items()}
    critical = sections.get("critical", [])
    quoted = [_unquote(i) for i in critical if i.startswith(SPLIT_TURN_TITLE)]
    turns = [parse_sections(q) for q in quoted] + [split_turn_part(text)]
    # a branch summary has no Critical Context: the gate's labelled items sit under In Progress / Blocked
    labelled = [*critical, *sections.get("in_progress", []), *sections.get("blocked", [])]
    parts = [_from_items(sections.get("constraints", []), sections.get("decisions", []),
                         sections.get("next", []), labelled)]
    parts[0] = attrs.evolve(parts[0], goals=tuple(g.removesuffix(CURRENT) for g in sections.get("goal", [])))
    parts += [_from_turn(turn) for turn in turns if turn]
    return combine_read(parts)


def _from_items(constraints: list[str], decisions: list[str], todos: list[str], context: list[str]) -> Carried:
    errors = [_after_label(i, _ERROR) for i in context if i.startswith(_ERROR)]
    requests = [_after_label(i, _REQUEST) for i in context if i.startswith(_REQUEST)]
    ids = [m for i in context if i.startswith("Identifiers") for m in _TICK.findall(i)]
    said = constraint_sentences(requests[-1]) if requests else []  # the verbatim request names its directions
    return Carried(
        constraints=tuple(dedupe_items([*constraints, *said])),
        decisions=tuple(decisions),
        todos=tuple(todos),
        identifiers=tuple(ids),
        last_error=errors[-1] if errors else "",
        last_request=requests[-1] if requests else "",
    )


def _from_turn(turn: dict[str, list[str]]) -> Carried:
    """A turn-prefix part: the labelled items of its context, the requirements of its original request."""
    suffix = [_unmarked(i) for i in turn.get("suffix", [])]
    lines = [ln for item in turn.get("request", []) for ln in item.splitlines()]
    request = "\n".join(ln.removeprefix(">").strip() for ln in lines if ln.startswith(">"))
    labelled = {label: [_after_label(i, (label,)) for i in suffix if i.startswith(label)] for label in _TURN_LABELS}
    constraints = [*constraint_sentences(request), *labelled["Constraint:"]]
    found = _from_items(constraints, labelled["Decision:"], labelled["Next:"], suffix)
    return found if found.last_request or not request.strip() else attrs.evolve(found, last_request=request.strip())



def _unquote(item: str) -> str:
    return "\n".join(ln.removeprefix(">").removeprefix(" ") for ln in item.splitlines()[1:])


def _unmarked(item: str) -> str:
    return item.removeprefix(MARK).strip()


def _after_label(item: str, labels: tuple[str, ...]) -> str:
    label = next(lb for lb in labels if item.startswith(lb))
    return item[len(label) :].strip()


def combine(summaries: Iterable[str]) -> Carried:
    """The facts of several earlier summaries, oldest first; the later's singletons win."""
    return combine_read(read_summary(text) for text in summaries)


def combine_read(parts: Iterable[Carried]) -> Carried:
    """Several read summaries (or parts of one) as one, oldest first, each item once by identity; an item a
    later part revises is marked (a split-turn part is newer than its history part); the later's singletons
    win."""
    out = Carried()
    for one in parts:
        out = Carried(
            constraints=tuple(merge_items(out.constraints, one.constraints, keep_marked=True)),
            decisions=tuple(merge_items(out.decisions, one.decisions, keep_marked=True)),
            todos=tuple(dedupe_items([*one.todos, *out.todos])),
            identifiers=(*one.identifiers, *out.identifiers),
            last_error=one.last_error or out.last_error,
            last_request=one.last_request or out.last_request,
            goals=tuple(dedupe_items([*out.goals, *one.goals])),
        )
    return out


def carry_forward(facts: Facts, previous: str | None, messages: Sequence[JsonDict]) -> Facts:
    """``facts`` of the range joined with those of the summaries it replaces (module invariants)."""
    texts = earlier_summaries(previous, messages)
    if not texts:
        return facts
    old = combine(texts)
    constraints = bounded(merge_items(old.constraints, facts.constraints))
    decisions = merge_items(old.decisions[-DECISIONS_KEPT:], facts.decisions)
    replaced = [i.removesuffix(SUPERSEDED) for i in (*old.constraints, *old.decisions) if i.endswith(SUPERSEDED)]
    todos = [t for t in old.todos if not is_ticked(t) and not names_changed_file(t, facts.modified_files)]
    ids = dedupe([*facts.identifiers, *dedupe(i for i in old.identifiers if i not in facts.identifiers)
                  [:CARRIED_IDENTIFIERS]])
    error = facts.last_error
    if not error and old.last_error:
        error = old.last_error if old.last_error.startswith(CARRIED_ERROR) else f"{CARRIED_ERROR}\n{old.last_error}"
    goals = dedupe([*old.goals, *facts.goals])
    return attrs.evolve(
        facts,
        goals=tuple(_bounded_goals(goals)),
        constraints=tuple(constraints),
        decisions=tuple(decisions),
        todos=tuple(dedupe([*facts.todos, *todos])[:TODOS_KEPT]),
        identifiers=tuple(ids),
        last_error=error,
        last_request=facts.last_request or _still_said(old.last_request, constraints),
        replaced=tuple(dedupe([*facts.replaced, *replaced])),
    )


def _still_said(request: str, constraints: Sequence[str]) -> str:
    """A carried request, unless every sentence of it is carried as a direction already (said once)."""
    listed = {key(c) for c in constraints}
    rest = [s for s in constraint_sentences(request) if key(s) not in listed]
    return request if rest or not constraint_sentences(request) else ""


def _bounded_goals(goals: list[str]) -> list[str]:
    """The first goal, then the newest: at most ``GOALS_KEPT``."""
    return goals if len(goals) <= GOALS_KEPT else goals[:1] + goals[-(GOALS_KEPT - 1) :]

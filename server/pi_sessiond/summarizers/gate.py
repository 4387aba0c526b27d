"""The fidelity gate: a summary is checked against the hard facts and repaired, never refused.

``repair(text, facts, purpose, headings)`` normalizes the headings
(:mod:`.headings`), then adds every fact the summary does not already carry
to the section it belongs in, each item marked ``[gate]``, and says what it
added.

Invariants:

* Pure and deterministic; runs on a summarizer's answer before anything is
  shown or written, never on a person's edit (the pipeline's contract).
* A fact counts as present when its text appears in the summary with case,
  whitespace, backticks and emphasis ignored; for an error, when its
  decisive lines (the last lines naming the failure) all appear.
* A direction the latest request (written verbatim) contains is not listed
  again (:mod:`.carry` reads it back from the request).
* Facts carried from an earlier summary (:mod:`.carry`) are required alike;
  a constraint or decision marked superseded counts as present by its text
  without the mark.
* Sections: constraints under Constraints & Preferences, carried goals under Goal,
  decisions under Key Decisions, open TODOs under Next Steps; the latest request,
  the last error and missing identifiers under Critical Context (history),
  In Progress / Blocked / Key Decisions (branch), Context Needed to Continue
  (turn prefix). A format of the user's own (no required headings) gets one
  trailing ``Kept by the fidelity gate:`` block.
* Before adding, the answer is tidied (:mod:`.tidy`): an item its section
  already has, one a later direction or decision revised and a superseded
  mark the range did not make go (whoever wrote them).
* Repairing a repaired summary adds nothing; a summary that already counts
  left-out directions (``LEFT_OUT``) gets no second count.
* File lists are not the gate's: the pipeline appends them (with the files
  changed through bash, which it reports as ``modifiedFile`` additions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from pi_sessiond.summarizers.base import Purpose
from pi_sessiond.summarizers.cues import DECISIVE
from pi_sessiond.summarizers.facts import LEFT_OUT, SUPERSEDED, Facts
from pi_sessiond.summarizers.headings import normalize, section_bounds
from pi_sessiond.summarizers.tidy import tidy

MARK = "[gate] "
_TARGETS: dict[str, dict[str, str]] = {
    "history": {
        "constraint": "## Constraints & Preferences",
        "lastRequest": "## Critical Context",
        "lastError": "## Critical Context",
        "identifier": "## Critical Context",
        "decision": "## Key Decisions",
        "todo": "## Next Steps",
        "goal": "## Goal",
    },
    "branch": {
        "constraint": "## Constraints & Preferences",
        "lastRequest": "### In Progress",
        "lastError": "### Blocked",
        "identifier": "## Key Decisions",
        "decision": "## Key Decisions",
        "todo": "## Next Steps",
        "goal": "## Goal",
    },
    "turnPrefix": dict.fromkeys(
        ("constraint", "lastRequest", "lastError", "identifier", "decision", "todo", "goal"),
        "## Context Needed to Continue",
    ),
}
_LABELS = {
    "lastRequest": "Latest user request (verbatim): ",
    "lastError": "Last error: ",
    "identifier": "Identifiers: ",
}
# One section holds everything in a turn prefix: each kind says what it is (read back by :mod:`.carry`).
_TURN_LABELS = {**_LABELS, "constraint": "Constraint: ", "decision": "Decision: ", "todo": "Next: ",
                "goal": "Goal: "}


@attrs.frozen
class Added:
    """One thing the gate put into a summary: its kind and its text."""

    kind: str
    text: str


@attrs.frozen
class Repaired:
    """The repaired summary and what was added to it, in order."""

    text: str
    added: tuple[Added, ...] = ()


def flat(text: str) -> str:
    """``text`` for comparison: lower case, no backticks/emphasis/quotes, whitespace collapsed."""
    return " ".join(re.sub(r"[`*_]", "", text.lower().replace(MARK.strip(), " ")).split())


def present(fact: str, summary_flat: str) -> bool:
    """Whether ``fact`` appears in a summary already passed through :func:`flat`."""
    needle = flat(fact)
    return not needle or needle in summary_flat


def error_present(error: str, summary_flat: str) -> bool:
    """Whether the decisive lines of ``error`` (its last lines naming the failure) appear."""
    lines = [ln for ln in error.splitlines()[1:] if ln.strip() and ln.strip() != "…"]
    key = [ln for ln in lines if DECISIVE.search(ln)][-2:] or lines[-1:]
    return all(present(ln, summary_flat) for ln in key)


def missing_facts(summary: str, facts: Facts) -> list[Added]:
    """The facts ``summary`` lacks, as additions (constraints, request, error, identifiers)."""
    have = flat(summary)
    added = [Added("goal", g) for g in facts.goals if not present(g, have)]
    request = [Added("lastRequest", facts.last_request)] if facts.last_request and not present(
        facts.last_request[:300], have) else []
    said = have + " " + flat(facts.last_request)  # a direction the verbatim request says is said once
    counted = flat(LEFT_OUT) in have  # one count of left-out directions is enough
    added += [Added("constraint", c) for c in facts.constraints
              if not present(c.removesuffix(SUPERSEDED), said) and not (counted and c.startswith(LEFT_OUT))]
    added += [Added("decision", d) for d in facts.decisions if not present(d.removesuffix(SUPERSEDED), have)]
    added += [Added("todo", t) for t in facts.todos if not present(t, have)]
    added += request
    if facts.last_error and not error_present(facts.last_error, have):
        added.append(Added("lastError", facts.last_error))
    have += " " + " ".join(flat(a.text) for a in added)
    ids = [i for i in facts.identifiers if not present(i, have)]
    if ids:
        added.append(Added("identifier", ", ".join(f"`{i}`" for i in ids)))
    return added


def repair(text: str, facts: Facts, purpose: Purpose, headings: Sequence[str]) -> Repaired:
    """``text`` with our headings and every missing fact added (module invariants)."""
    normalized = normalize(text, headings)
    body = tidy(normalized.text, facts) if headings else normalized.text
    added = missing_facts(body, facts)
    if not added:
        return Repaired(body, ())
    targets = _TARGETS[purpose] if headings else {}
    for heading in dict.fromkeys(targets.get(a.kind, "") for a in added):
        items = [_item(a, purpose) for a in added if targets.get(a.kind, "") == heading]
        body = _insert(body, heading, items)
    return Repaired(body, tuple(added))


def _item(addition: Added, purpose: Purpose) -> str:
    labels = _TURN_LABELS if purpose == "turnPrefix" else _LABELS
    first, *rest = (labels.get(addition.kind, "") + addition.text).split("\n")
    return "\n".join(["- " + MARK + first, *("  " + line if line else "" for line in rest)])


def _insert(body: str, heading: str, items: list[str]) -> str:
    """``items`` appended to the section under ``heading`` (replacing a lone ``(none)``)."""
    block = "\n".join(items)
    bounds = section_bounds(body, heading) if heading else None
    if bounds is None:
        return body.rstrip() + "\n\nKept by the fidelity gate:\n" + block
    start, end = bounds
    section = body[start:end].strip("\n")
    section = "" if section.strip() in ("(none)", "- (none)") else section
    joined = (section + "\n" + block) if section else block
    tail = body[end:]
    return body[:start] + "\n" + joined + ("\n\n" + tail.lstrip("\n") if tail.strip() else "")

"""Long runs: 40+ compactions in a small window, split turns, directions stated once early.

A :func:`long_run` session opens with one long turn whose user message sets the goal and
seven directions that are never stated again nor revised, two preferences that are reversed
later, and an observation; every round after it is a short ask and a long turn, so nearly every
compaction cuts a turn in two and the round's user message lies in the turn prefix. The
planted facts are scored as in the rest of the suite (:mod:`.score`); on top of that,
:func:`look` reads what each written summary *says*:

* ``repeats``: directions (stated once, never revised) named more than once;
* ``marked``: directions on a line that calls them replaced or superseded;
* ``gone``: directions missing while no line counts left-out items (a silent drop);
* ``duplicates``: list items (12+ characters) that occur twice outside the work logs (Done, In
  Progress, Progress So Far: two edits of one file may read alike);
* ``remarks``: observations the user made that sit under Constraints & Preferences;
* ``tokens``: the summary's size (characters / 4).

Nothing here reads ``pi_sessiond.summarizers`` (the suite's rule, see ``__init__``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from tests.fidelity import material as M
from tests.fidelity.heldout import load
from tests.fidelity.scenarios import Files, Scenario, Size
from tests.fidelity.score import REPLACED_MARK, Hit, normalize, score, summarized_ids, tokens
from tests.fidelity.sessions import Planter, Turn
from tests.fidelity.suite import Summarizer

# Said once, in the first user message, never again and never revised: (text, match).
DIRECTIONS = [
    ("Never touch anything under migrations/.", "Never touch anything under migrations/"),
    ("Always round money with ROUND_HALF_EVEN.", "round money with ROUND_HALF_EVEN"),
    ("While iterating, only run `pytest -x -q tests/unit/billing_fast`; the full suite takes forty minutes.",
     "only run pytest -x -q tests/unit/billing_fast"),
    ("Keep the signature of ledger.export.run_export() exactly as it is.", "signature of ledger.export.run_export()"),
    ("No new packages in pyproject.toml unless I say so.", "No new packages in pyproject.toml"),
    ("Call the feature flag EXPORT_VIA_QUEUE.", "feature flag EXPORT_VIA_QUEUE"),
    ("Commit messages go in the imperative mood, one change per commit.", "imperative mood, one change per commit"),
]
# Preferences said in the first message and reversed later: (earlier, its match), (later, its match).
REVERSED = [
    (("Print amounts with a comma as the decimal separator.", "comma as the decimal separator"),
     ("Change of plan: amounts use a dot as the decimal separator, not a comma.", "dot as the decimal separator")),
    M.PREFERENCES["en"][0],
]
REVERSED_AT = (12, 20)  # the rounds whose ask reverses them
OBSERVATION = "I suspect float rounding."
ACKS = {5: "Great, all green.", 9: "The dashboard looked odd yesterday evening."}
ASK = "Carry on with part {n} of the exporter move."
START = "Start by reading the cron exporter and tell me what it does."


@dataclass(frozen=True)
class Window:
    """One long run: compactions, ``keepRecentTokens``, the summarizer's context window, turn sizes."""

    name: str
    rounds: int
    keep: int
    window: int
    size: Size


SMALL = Window("24k", 46, 1500, 24_000, Size("long", 1500, 1, 5))
TINY = Window("9k", 46, 1200, 9_000, Size("long", 1200, 1, 4))


def long_run(window: Window, seed: int = 28) -> Scenario:
    """The session of module docstring, ``window.rounds`` rounds, each followed by a compaction."""
    held, rng, files = load(), Random(seed), Files(Random(seed + 1))
    out = Scenario(f"long-run-{window.name}", "en", seed)
    size = window.size
    first = Turn(lang="en", request=(START, START.rstrip("."), "start"), goal=M.GOALS["en"],
                 directions=DIRECTIONS, prefers=[(text, match, "") for (text, match), _ in REVERSED],
                 remarks=[OBSERVATION], steps=size.tail_steps, error=rng.choice(held.errors), error_first=True,
                 decisions=[M.DECISIONS[0]], said_ids=[M.SAID_IDS[0]], **files.work())  # type: ignore[arg-type]
    out.rounds.append(([first], "compact"))
    for r in range(1, window.rounds):
        ask = ASK.format(n=r)
        turns = []
        if r % 3 == 0:  # now and then a short turn first: the cut then keeps a whole turn too
            short = M.FOLLOW_UPS["en"].format(n=r)
            turns.append(Turn(lang="en", request=(short, short.rstrip("."), "follow-up"), steps=size.steps,
                              said_ids=[M.SAID_IDS[r % len(M.SAID_IDS)]], **files.work()))  # type: ignore[arg-type]
        prefers = [(later[0], later[1], earlier[1]) for (earlier, later), at in zip(REVERSED, REVERSED_AT, strict=True)
                   if at == r]
        turns.append(Turn(
            lang="en", request=(ask, ask.rstrip("."), "ask"), steps=size.tail_steps, error_first=True,
            error=rng.choice(held.errors) if r % 4 == 0 else None, prefers=prefers,
            remarks=[ACKS[r]] if r in ACKS else [],
            decisions=[M.DECISIONS[r // 2 % len(M.DECISIONS)]] if r % 2 == 0 else [],
            said_ids=[M.SAID_IDS[(r + 3) % len(M.SAID_IDS)]],
            plan=[M.PLANS[r // 3 % len(M.PLANS)]] if r % 3 == 1 else [],
            **files.work()))  # type: ignore[arg-type]
        out.rounds.append((turns, "compact"))
    return out


# ------------------------------------------------------------------ what a summary says


_FILE_BLOCK = re.compile(r"<(read-files|modified-files)>.*?</\1>", re.S)
_ITEM = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)(.*)$")
_COUNT = re.compile(r"not listed|left out", re.I)
_GATE = "[gate]"


def constraints_section(summary: str) -> str:
    """The text under ``## Constraints & Preferences`` (to the next heading of level 1-2)."""
    match = re.search(r"^## Constraints & Preferences[ \t]*\n(.*?)(?=^#{1,2} |\Z)", summary, re.M | re.S)
    return match.group(1) if match else ""


# Work logs may name the same step twice (two edits of one file); every other section may not.
_LOGS = ("### Done", "### In Progress", "## Progress So Far")


def list_items(summary: str) -> list[str]:
    """The normalized list items of ``summary`` of 12+ characters outside the work logs (``[gate]`` marks and
    labels dropped)."""
    out = []
    section = ""
    for line in _FILE_BLOCK.sub("", summary).splitlines():
        section = line.strip() if line.startswith("#") else section
        item = _ITEM.match(line)
        if not item or section in _LOGS:
            continue
        text = normalize(item.group(1).replace(_GATE, "")).removeprefix("constraint: ")
        if len(text) >= 12 and not _COUNT.search(text):
            out.append(text)
    return out


@dataclass
class Look:
    """What one written summary says (module docstring)."""

    round: int
    tokens: int
    repeats: list[str] = field(default_factory=list)
    marked: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    remarks: list[str] = field(default_factory=list)
    counted: bool = False
    marks: int = 0


def look(round_: int, summary: str, said: Sequence[str]) -> Look:
    """:class:`Look` of ``summary``; ``said``: the remarks the user made so far."""
    body = _FILE_BLOCK.sub("", summary)
    flat = normalize(body)
    lines = [normalize(line) for line in body.splitlines()]
    out = Look(round_, tokens(summary), counted=bool(_COUNT.search(body)),
               marks=sum(bool(REPLACED_MARK.search(line)) for line in lines))
    for _, match in DIRECTIONS:
        needle = normalize(match)
        found = flat.count(needle)
        if found > 1:
            out.repeats.append(match)
        if any(needle in line and REPLACED_MARK.search(line) for line in lines):
            out.marked.append(match)
        if not found:
            (out.missing if out.counted else out.gone).append(match)
    seen: dict[str, int] = {}
    for item in list_items(summary):
        seen[item] = seen.get(item, 0) + 1
    out.duplicates = [item for item, n in seen.items() if n > 1]
    section = normalize(constraints_section(body))
    out.remarks = [r for r in said if normalize(r) in section]
    return out


@dataclass
class LongReport:
    """Hits per compaction (as in :class:`~tests.fidelity.suite.Report`), looks, failures."""

    summarizer: str
    window: str
    hits: list[Hit] = field(default_factory=list)
    looks: list[Look] = field(default_factory=list)
    failures: list[tuple[int, Any]] = field(default_factory=list)
    splits: list[bool] = field(default_factory=list)

    @property
    def sizes(self) -> list[int]:
        """Summary tokens after each compaction."""
        return [lk.tokens for lk in self.looks]


def run_long(summ: Summarizer, window: Window, folder: Path) -> LongReport:
    """Write, grow and compact the long run of ``window`` through ``summ``."""
    folder.mkdir(parents=True, exist_ok=True)
    scenario = long_run(window)
    planter = Planter(folder / f"{scenario.name}-{summ.name}.jsonl", scenario.seed)
    report = LongReport(summ.name, window.name)
    said: list[str] = []
    for n, (turns, _) in enumerate(scenario.rounds):
        for turn in turns:
            planter.turn(turn)
            said += list(turn.remarks)
        planter.flush()
        path_before = planter.path_ids
        outcome = summ.compact(planter.path)
        written = [row for row in planter.sync() if row["type"] == "compaction"]
        if not written:
            report.failures.append((n, outcome))
            continue
        entry = written[-1]
        kinds = {node.id: node.kind for node in planter.b.path}
        report.splits.append(kinds.get(entry["firstKeptEntryId"]) != "user")
        report.hits += score(summ.name, scenario.name, n, planter.facts, entry, summarized_ids(path_before, entry))
        report.looks.append(look(n, entry["summary"], said))
    return report

"""Runs every scenario through one summarizer and collects the hits, failures and summary sizes.

For each scenario a fresh session file is written (a :class:`~tests.fidelity.sessions.Planter`),
grown round by round; after a round the scenario's action runs through the
summarizer (``compact`` or ``branch``), the entry it wrote is read back from the
file, adopted into the planter's path and scored. A request that wrote nothing scores every fact of
its range as lost and is listed in ``failures``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from tests.fidelity.runner import Outcome
from tests.fidelity.scenarios import Scenario
from tests.fidelity.score import Hit, score, summarized_ids, tokens
from tests.fidelity.sessions import Planter


class Summarizer(Protocol):
    """A :class:`~tests.fidelity.runner.Cli` or :class:`~tests.fidelity.runner.Daemon`."""

    name: str

    def compact(self, path: Path) -> Outcome: ...

    def navigate(self, path: Path, target: str) -> Outcome: ...


@dataclass
class Report:
    """Everything one summarizer run measured."""

    summarizer: str
    hits: list[Hit] = field(default_factory=list)
    failures: list[tuple[str, int, Outcome]] = field(default_factory=list)
    sizes: dict[str, list[int]] = field(default_factory=dict)  # summary tokens per compaction round
    split: dict[str, list[bool]] = field(default_factory=dict)  # whether each compaction split a turn


def run_scenario(summ: Summarizer, scenario: Scenario, folder: Path, report: Report) -> Planter:
    """Write, grow and summarize one scenario; returns its planter (facts and path)."""
    planter = Planter(folder / f"{scenario.name}-{summ.name}.jsonl", scenario.seed)
    for n, (turns, action) in enumerate(scenario.rounds):
        firsts = [planter.turn(t) for t in turns]
        planter.flush()
        if action == "none":
            continue
        path_before = planter.path_ids
        outcome = summ.compact(planter.path) if action == "compact" else summ.navigate(planter.path, firsts[0])
        written = [row for row in planter.sync() if row["type"] in ("compaction", "branch_summary")]
        entry = written[-1] if written else None  # as read back from the file, not from the answer
        if entry is None:
            report.failures.append((scenario.name, n, outcome))
            report.hits += score(summ.name, scenario.name, n, planter.facts, None, path_before)
            continue
        if action == "branch":
            planter.reattach(set(path_before) - set(planter.path_ids), entry["id"])
        else:
            report.sizes.setdefault(scenario.name, []).append(tokens(entry["summary"]))
            kinds = {node.id: node.kind for node in planter.b.path}
            report.split.setdefault(scenario.name, []).append(kinds.get(entry["firstKeptEntryId"]) != "user")
        report.hits += score(summ.name, scenario.name, n, planter.facts, entry,
                             summarized_ids(path_before, entry))
    return planter


def run(summ: Summarizer, scenarios: Sequence[Scenario], folder: Path) -> Report:
    """Every scenario through ``summ``."""
    folder.mkdir(parents=True, exist_ok=True)
    report = Report(summ.name)
    for scenario in scenarios:
        run_scenario(summ, scenario, folder, report)
    return report

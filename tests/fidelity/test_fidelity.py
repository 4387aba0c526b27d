"""The planted-fact suite at smoke size: the held-out list, the generator, the scorer, the targets.

Sessions come from :mod:`tests.fidelity.scenarios` (``SMOKE``); the offline
summarizer runs through the real ``pi-sessiond compact``/``navigate`` command
line, the model through the real daemon with a loopback provider that answers
with a deliberately incomplete summary. Targets: modified files,
constraints, the last request and the last error at 100%, the summary at most
12k tokens over 10 repeated compactions, a model answer with other headings
compacts, a cut-off answer is ``summaryIncomplete``, a non-shrinking one
``notShrinking`` with the file unchanged. The full-size figures are
``bench/bench_fidelity.py``'s.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from tests.fidelity import models
from tests.fidelity.heldout import LANGS, load
from tests.fidelity.runner import Cli, Daemon, Outcome
from tests.fidelity.scenarios import SMOKE, Scenario, all_scenarios, long_session
from tests.fidelity.score import Hit, by_class, entry_text, normalize, score
from tests.fidelity.sessions import CLASSES, Planter
from tests.fidelity.suite import Report, run
from tests.loopback_provider import Fault, LoopbackProvider

UNIQUE = ("constraint", "lastRequest", "lastError", "identifier", "goal", "todo", "decision", "preference")


def grown(scenario: Scenario, folder: Path) -> Planter:
    """The scenario's session with every round written and no summary."""
    planter = Planter(folder / f"{scenario.name}.jsonl", scenario.seed)
    for turns, _ in scenario.rounds:
        for turn in turns:
            planter.turn(turn)
    planter.flush()
    return planter


def message_texts(planter: Planter) -> dict[str, str]:
    """Entry id -> the normalized text of its message (content blocks and tool arguments)."""
    out = {}
    for line in planter.path.read_bytes().splitlines()[1:]:
        row = orjson.loads(line)
        if row["type"] == "message":
            out[row["id"]] = entry_text({"details": row["message"]["content"]})
    return out


def missed(hits: list[Hit], cls: str) -> list[str]:
    return [f"{h.scenario}#{h.round} {h.fact.note or h.fact.lang}: {h.fact.needles}"
            for h in hits if h.fact.cls == cls and not h.kept]


# ------------------------------------------------------------------ the list and the generator


def test_the_held_out_list_has_twenty_phrasings_per_language_and_every_shape() -> None:
    held = load()
    assert len(LANGS) >= 4
    for lang in LANGS:
        cons = held.constraints_of(lang)
        assert len(cons) >= 20, lang
        assert {c.kind for c in cons} == {"requirement", "prohibition", "preference", "quoted", "override"}
        assert all(c.earlier for c in cons if c.kind == "override")
        assert len(held.requests_of(lang)) >= 4, lang
    shapes = {e.shape.split("-")[0] for e in held.errors}
    assert shapes == {"python", "pytest", "typescript", "rust"}


def test_planted_needles_occur_only_where_they_were_planted(tmp_path: Path) -> None:
    for scenario in all_scenarios(SMOKE)[:7]:  # every shape but the request sweep (same turns, smaller)
        planter = grown(scenario, tmp_path)
        texts = message_texts(planter)
        for fact in (f for f in planter.facts if f.cls in UNIQUE):
            homes = {f.entry_id for f in planter.facts if f.needles == fact.needles}
            found = {eid for eid, text in texts.items() if all(normalize(n) in text for n in fact.needles)}
            assert found == homes, (scenario.name, fact)


def test_the_decisive_error_lines_sit_past_the_first_2000_characters(tmp_path: Path) -> None:
    planter = grown(all_scenarios(SMOKE)[0], tmp_path)
    texts = message_texts(planter)
    errors = [f for f in planter.facts if f.cls == "lastError"]
    assert errors
    for fact in errors:
        assert all(texts[fact.entry_id].index(normalize(n)) > 2000 for n in fact.needles), fact


def test_the_scorer_finds_every_fact_in_the_conversation_and_none_in_an_empty_summary(tmp_path: Path) -> None:
    planter = grown(long_session("ja", SMOKE, 3, load()), tmp_path)
    ids = planter.path_ids
    everything = {"summary": "\n".join(message_texts(planter).values()), "details": {"modifiedFiles": []}}
    full = score("x", "s", 0, planter.facts, everything, ids)
    assert full and all(h.kept for h in full if not h.fact.replaced)
    # a preference that replaced an earlier one counts only when the earlier one is gone or said to be replaced
    reversed_ = [h for h in full if h.fact.replaced]
    assert reversed_ and not any(h.kept for h in reversed_)
    marked = everything["summary"].replace(reversed_[0].fact.replaced[0],
                                           reversed_[0].fact.replaced[0] + " (replaced by a later preference)")
    assert all(h.kept for h in score("x", "s", 0, planter.facts, {**everything, "summary": marked}, ids))
    assert {h.fact.cls for h in full} >= {"modifiedFile", "constraint", "lastRequest", "lastError", "goal"}
    assert not any(h.kept for h in score("x", "s", 0, planter.facts, {"summary": "", "details": None}, ids))
    last = [h.fact for h in full if h.fact.cls == "lastRequest"]
    assert len(last) == 1 and last[0].entry_id == [f for f in planter.facts if f.cls == "lastRequest"][-1].entry_id
    assert "「今すぐ同期」" not in entry_text({"summary": "「今すぐ同期」"})  # quotes are unified before matching


# ------------------------------------------------------------------ the two summarizers


@pytest.fixture(scope="module")
def offline(tmp_path_factory: pytest.TempPathFactory) -> Report:
    folder = tmp_path_factory.mktemp("fidelity-offline")
    return run(Cli(folder / "agent", SMOKE.keep), all_scenarios(SMOKE), folder)


@pytest.fixture(scope="module")
def incomplete_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Report]:
    folder = tmp_path_factory.mktemp("fidelity-loopback")
    with LoopbackProvider() as loopback:
        daemon = Daemon(folder / "agent", SMOKE.keep, Fault("ok", reply=models.incomplete), loopback)
        try:
            yield run(daemon, all_scenarios(SMOKE), folder)
        finally:
            daemon.close()


@pytest.mark.parametrize("name", ["offline", "incomplete_model"])
def test_every_request_wrote_an_entry_and_every_class_was_scored(name: str, request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(name)
    assert report.failures == []
    table = by_class(report.hits)
    assert set(table) == set(CLASSES)
    langs = {h.fact.lang for h in report.hits if h.fact.cls == "constraint"}
    assert langs == set(LANGS)
    assert any(any(splits) for splits in report.split.values()) and len(report.sizes["repeated"]) == 10


@pytest.mark.parametrize("name", ["offline", "incomplete_model"])
@pytest.mark.parametrize("cls", ["modifiedFile", "constraint", "lastRequest", "lastError"])
def test_target_classes_are_kept_at_100_percent(cls: str, name: str, request: pytest.FixtureRequest) -> None:
    report: Report = request.getfixturevalue(name)
    assert missed(report.hits, cls) == []


def test_every_held_out_constraint_request_and_error_was_scored(offline: Report) -> None:
    held = load()
    notes = {h.fact.note.split(":")[0] for h in offline.hits}
    assert {c.id for c in held.constraints} <= notes
    assert {r.id for r in held.requests} <= notes
    assert {e.shape for e in held.errors} <= notes


@pytest.mark.parametrize("name", ["offline", "incomplete_model"])
def test_the_summary_stays_within_12k_tokens_over_10_compactions(name: str, request: pytest.FixtureRequest) -> None:
    sizes = request.getfixturevalue(name).sizes["repeated"]
    assert len(sizes) == 10 and max(sizes) <= 12_000, sizes


# ------------------------------------------------------------------ guarantees of the daemon


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def session_file(tmp_path: Path) -> Path:
    return grown(long_session("en", SMOKE, 5, load()), tmp_path).path


def compact_with(tmp_path: Path, path: Path, fault: Fault) -> tuple[Outcome, str, str]:
    before = sha(path)
    with LoopbackProvider() as loopback:
        daemon = Daemon(tmp_path / "agent", SMOKE.keep, fault, loopback)
        try:
            outcome = daemon.compact(path)
        finally:
            daemon.close()
    return outcome, before, sha(path)


def test_a_model_answer_with_other_headings_compacts(tmp_path: Path, session_file: Path) -> None:
    outcome, _, _ = compact_with(tmp_path, session_file, Fault("ok", reply=models.other_headings))
    assert outcome.entry is not None and outcome.entry["type"] == "compaction", outcome


def test_a_cut_off_answer_is_summary_incomplete_and_writes_nothing(tmp_path: Path, session_file: Path) -> None:
    outcome, before, after = compact_with(tmp_path, session_file, Fault("length"))
    assert (outcome.code, outcome.reason) == (-32013, "summaryIncomplete"), outcome
    assert after == before


def test_a_non_shrinking_compaction_is_not_shrinking_and_writes_nothing(tmp_path: Path, session_file: Path) -> None:
    # a summary as large as the whole context before it: whatever the estimate, the context does not shrink
    dry = subprocess.run([sys.executable, "-m", "pi_sessiond", "compact", str(session_file), "--dry-run", "--json"],
                         capture_output=True, text=True, timeout=300, check=True)
    before = json.loads(dry.stdout)["tokensBefore"]
    outcome, sha_before, sha_after = compact_with(tmp_path, session_file, Fault("ok", reply=models.padded(before)))
    assert (outcome.code, outcome.reason) == (-32012, "notShrinking"), outcome
    assert sha_after == sha_before

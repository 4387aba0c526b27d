"""Carry-forward by identity and the gate's tidying, on examples of our own making."""

from __future__ import annotations

from pi_sessiond.compaction.prompts import SPLIT_TURN_SEPARATOR
from pi_sessiond.pipeline.requests import HISTORY_HEADINGS
from pi_sessiond.summarizers.carry import carry_forward, read_summary
from pi_sessiond.summarizers.facts import Facts, extract_facts
from pi_sessiond.summarizers.gate import repair
from pi_sessiond.summarizers.revise import SUPERSEDED, merge_items, revised_within, revises

RULE = "Never touch anything under `migrations/`."
HISTORY = f"## Goal\n- Fix rounding\n\n## Constraints & Preferences\n- [gate] {RULE}\n\n## Progress\n### Done\n(none)"
TURN = (f"## Original Request\n- The user asked for more.\n\n## Progress So Far\n(none)\n\n"
        f"## Context Needed to Continue\n- [gate] Constraint: {RULE}")


def test_the_same_item_in_both_parts_is_one_item_unmarked() -> None:
    carried = read_summary(HISTORY + SPLIT_TURN_SEPARATOR + TURN)
    assert carried.constraints == (RULE,)
    facts = carry_forward(extract_facts([{"role": "user", "content": "Go on."}]), HISTORY + SPLIT_TURN_SEPARATOR + TURN,
                          [])
    assert [c for c in facts.constraints if "migrations" in c] == [RULE]


JSON = "Write the config in JSON format."
YAML = "Actually, write the config in YAML format now."


def test_only_a_revision_marks_and_the_mark_lasts_one_compaction() -> None:
    assert not revises("Never touch anything under `vendor/`.", RULE)  # a second rule, not a revision
    assert not revises("Write the config in YAML instead of JSON format.", JSON)  # a preference, no revision cue
    assert revises(YAML, JSON)
    assert revises("Retry at most 3 times.", "Retry at most 5 times.")  # the same but for one number
    assert not revises("Retry 3 times.", "Retry 5 times.")  # too short to tell
    assert revises("Keep the retry budget at 3 attempts.", "Keep the retry budget at 5 attempts.")
    merged = merge_items([JSON, RULE], [YAML, RULE])
    assert merged == [JSON + SUPERSEDED, RULE, YAML]
    assert merge_items(merged, []) == [RULE, YAML]  # the marked one goes at the next compaction
    assert revised_within(["Print with a comma.", "Change of plan: print with a dot, not a comma."])[0].endswith(
        SUPERSEDED)


def test_the_gate_takes_repeats_revised_items_and_stale_marks_out_of_an_answer() -> None:
    answer = ("## Goal\n- Fix rounding\n\n## Constraints & Preferences\n"
              f"- {RULE}\n- never touch anything under `migrations/`\n- Write the config in JSON format.\n"
              "- Log at debug level." + SUPERSEDED + "\n\n## Critical Context\n- none")
    facts = Facts(constraints=(RULE,), replaced=(JSON,))
    text = repair(answer, facts, "history", HISTORY_HEADINGS).text
    section = text.split("## Constraints & Preferences\n", 1)[1].split("\n\n", 1)[0]
    assert section == f"- {RULE}"
    assert repair(text, facts, "history", HISTORY_HEADINGS).text == text  # tidy text stays as it is


def test_a_merge_reads_each_item_once_however_many_later_items_it_is_compared_with() -> None:
    from pi_sessiond.summarizers import revise

    items = [f"Actually keep the retry budget of service {n} at {n} attempts, " + "and log each attempt " * 40
             for n in range(150)]
    revise._words.cache_clear()
    revise.key.cache_clear()
    marked = revised_within(items)
    assert len(marked) == 150 and marked[-1] == items[-1]
    assert revise._words.cache_info().misses <= 150 and revise.key.cache_info().misses <= 150

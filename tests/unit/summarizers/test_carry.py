"""Carry-forward: what an earlier summary said is required of the next one (own dev examples)."""

from __future__ import annotations

from pi_sessiond.compaction.prompts import SPLIT_TURN_SEPARATOR
from pi_sessiond.pipeline.requests import BRANCH_HEADINGS, HISTORY_HEADINGS, TURN_PREFIX_HEADINGS
from pi_sessiond.summarizers.carry import CARRIED_ERROR, carry_forward, read_summary
from pi_sessiond.summarizers.facts import Facts, extract_facts
from pi_sessiond.summarizers.gate import MARK, SUPERSEDED, repair

PREVIOUS = """## Goal
- Port the CSV importer to Rust (current)

## Constraints & Preferences
- Never touch `legacy/` without asking.
- [gate] Kein `unwrap()` im Produktionscode.
- Usa siempre tabulaciones.

## Progress
### Done
- [x] `src/csv.rs` (2 edits)

### In Progress
(none)

### Blocked
(none)

## Key Decisions
- **Use `csv` crate instead of a hand-written parser**: it handles quoting

## Next Steps
1. Wire `import()` into the CLI
2. Update `docs/import.md`

## Critical Context
- Last error: `bash` (`cargo test`) failed: running 4 tests
  thread 'roundtrip' panicked at src/csv.rs:88:5:
  assertion `left == right` failed
- [gate] Identifiers: `src/csv.rs`, `import()`, `v0.4.2`
- Last user request (verbatim):
  Make the importer stream rows.

<modified-files>
src/csv.rs
</modified-files>"""


def user(text: str) -> dict[str, object]:
    return {"role": "user", "content": text}


def edit(path: str) -> dict[str, object]:
    call = {"type": "toolCall", "id": "t1", "name": "edit", "arguments": {"path": path}}
    return {"role": "assistant", "content": [call], "stopReason": "toolUse"}


def test_a_previous_summary_is_read_into_facts() -> None:
    carried = read_summary(PREVIOUS)
    # the latest request, written verbatim, names its directions: they are carried as constraints
    assert carried.constraints == (
        "Never touch `legacy/` without asking.", "Kein `unwrap()` im Produktionscode.", "Usa siempre tabulaciones.",
        "Make the importer stream rows.")
    assert carried.decisions == ("**Use `csv` crate instead of a hand-written parser**: it handles quoting",)
    assert carried.todos == ("Wire `import()` into the CLI", "Update `docs/import.md`")
    assert carried.identifiers == ("src/csv.rs", "import()", "v0.4.2")
    assert carried.last_error.endswith("assertion `left == right` failed")
    assert carried.last_request == "Make the importer stream rows."


def test_a_model_that_drops_the_previous_facts_is_repaired() -> None:
    facts = carry_forward(extract_facts([user("Zeig mir die Tests.")]), PREVIOUS, [])
    answer = "## Goal\n- streaming import\n\n## Critical Context\n- nothing"
    repaired = repair(answer, facts, "history", HISTORY_HEADINGS)
    kinds = [a.kind for a in repaired.added]
    # the three carried constraints and the range's own direction
    assert kinds.count("constraint") == 4 and "decision" in kinds and kinds.count("todo") == 2
    assert f"- {MARK}Usa siempre tabulaciones." in repaired.text
    next_steps = repaired.text.split("## Next Steps\n", 1)[1].split("\n\n", 1)[0]
    assert f"{MARK}Update `docs/import.md`" in next_steps
    # The range has a request of its own: the newer one is the latest (the older one is no goal: its
    # directions are constraints already); the range has no error: the carried one stays.
    assert f"{MARK}Latest user request (verbatim): Zeig mir die Tests." in repaired.text
    goal = repaired.text.split("## Goal\n", 1)[1].split("\n\n", 1)[0]
    assert goal == f"- streaming import\n- {MARK}Port the CSV importer to Rust"
    assert CARRIED_ERROR in repaired.text and "src/csv.rs:88:5" in repaired.text
    assert repair(repaired.text, facts, "history", HISTORY_HEADINGS).added == ()  # idempotent
    # The repaired summary, compacted once more by a model that drops everything, still keeps them.
    again = carry_forward(extract_facts([user("ok, weiter so bitte")]), repaired.text, [])
    twice = repair("## Goal\n- x", again, "history", HISTORY_HEADINGS)
    for needle in ("Never touch `legacy/` without asking.", "Kein `unwrap()`", "src/csv.rs:88:5", "`v0.4.2`",
                   "Zeig mir die Tests."):
        assert needle in twice.text
    assert twice.text.count(CARRIED_ERROR) == 1 and twice.text.count("Make the importer stream rows.") == 1


def test_a_newer_error_and_a_restated_constraint_win() -> None:
    messages = [
        user("Actually, touch `legacy/` only when the tests fail there."),
        {"role": "toolResult", "toolName": "bash", "isError": True,
         "content": [{"type": "text", "text": "error[E0382]: borrow of moved value: `row`\n --> src/csv.rs:12:9"}]},
    ]
    facts = carry_forward(extract_facts(messages), PREVIOUS, messages)
    assert facts.constraints[0] == "Never touch `legacy/` without asking." + SUPERSEDED
    assert "Actually, touch `legacy/` only when the tests fail there." in facts.constraints
    assert "E0382" in facts.last_error and CARRIED_ERROR not in facts.last_error
    repaired = repair("## Goal\n- x", facts, "history", HISTORY_HEADINGS)
    assert "without asking. (superseded by a later item)" in repaired.text
    assert "src/csv.rs:88:5" not in repaired.text  # the older error is gone


def test_todos_done_in_the_range_are_not_carried() -> None:
    facts = carry_forward(extract_facts([edit("docs/import.md")]), PREVIOUS, [edit("docs/import.md")])
    assert facts.todos == ("Wire `import()` into the CLI",)


def test_a_branch_summary_in_the_range_is_an_earlier_summary() -> None:
    branch = {"role": "branchSummary", "summary": "The user explored a different branch.\n\n" + PREVIOUS,
              "fromId": "x", "timestamp": 0}
    messages = [branch, user("Try the other approach, please.")]
    facts = carry_forward(extract_facts(messages), None, messages)
    assert "Usa siempre tabulaciones." in facts.constraints and facts.todos
    repaired = repair("## Goal\n- other approach", facts, "branch", BRANCH_HEADINGS)
    assert f"{MARK}Usa siempre tabulaciones." in repaired.text


def test_no_earlier_summary_changes_nothing() -> None:
    facts = extract_facts([user("Do not rename `main()`.")])
    assert carry_forward(facts, None, []) is facts
    assert carry_forward(Facts(), "free text without our headings", []).constraints == ()


def test_a_split_turn_part_is_carried_too() -> None:
    facts = extract_facts([user("Bitte keine globalen Variablen. Fix the parser.")])
    turn = repair("## Original Request\n> fix it\n\n## Progress So Far\n- read files", facts, "turnPrefix",
                  TURN_PREFIX_HEADINGS).text
    # the verbatim request names the direction: it is not listed twice, and it is read back from there
    assert f"- {MARK}Latest user request (verbatim): Bitte keine globalen Variablen. Fix the parser." in turn
    assert "Constraint: Bitte keine" not in turn
    text = "## Goal\n- old\n\n## Progress\n### Done\n(none)" + SPLIT_TURN_SEPARATOR + turn
    carried = read_summary(text)
    assert "Bitte keine globalen Variablen." in carried.constraints
    assert carried.last_request == "Bitte keine globalen Variablen. Fix the parser."
    # Quoted by an earlier offline merge ("Earlier split-turn context:"), it is still read.
    quoted = "## Goal\n- old\n\n## Progress\n\n## Critical Context\n- Earlier split-turn context:\n" + "\n".join(
        "  > " + ln for ln in turn.splitlines())
    assert "Bitte keine globalen Variablen." in read_summary(quoted).constraints

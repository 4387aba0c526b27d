"""The fidelity gate, heading normalization and size fitting, on answers of our own making."""

from __future__ import annotations

from pi_sessiond.pipeline.requests import BRANCH_HEADINGS, HISTORY_HEADINGS, TURN_PREFIX_HEADINGS
from pi_sessiond.summarizers.facts import Facts
from pi_sessiond.summarizers.fit import fit_text, tokens
from pi_sessiond.summarizers.gate import MARK, repair
from pi_sessiond.summarizers.headings import normalize

FACTS = Facts(
    constraints=("Never use `unsafe`.", "Keine neuen Crates."),
    last_request="Fix the roundtrip test next.",
    last_error="bash failed:\nrunning 3 tests\n…\nassertion `left == right` failed\nerror: test failed",
    identifiers=("parse()", "src/lib.rs"),
)


def lines(text: str) -> list[str]:
    return text.splitlines()


def test_other_headings_are_mapped_to_ours_in_order_and_nothing_is_lost() -> None:
    answer = (
        "Intro line.\n\n# 1. Objective\nShip the parser.\n\n## ✅ Completed:\n- wrote `lexer.rs`\n\n"
        "## Risks\n- the grammar is ambiguous\n\n**Next steps**\n1. fuzz it\n\n### Constraints and preferences\n- none"
    )
    result = normalize(answer, HISTORY_HEADINGS)
    headings = [ln for ln in lines(result.text) if ln.startswith("#")]
    assert headings == list(HISTORY_HEADINGS)
    assert result.text.startswith("Intro line.\n\n## Goal\nShip the parser.")
    assert "### Done\n- wrote `lexer.rs`\n\n**Risks**\n- the grammar is ambiguous" in result.text
    assert "## Next Steps\n1. fuzz it" in result.text and "## Constraints & Preferences\n- none" in result.text
    assert result.added_headings == ("## Progress", "### In Progress", "### Blocked", "## Key Decisions",
                                     "## Critical Context")
    assert normalize(result.text, HISTORY_HEADINGS).text == result.text  # idempotent


def test_a_user_format_is_left_alone() -> None:
    assert normalize("# Mine\nfree text", ()).text == "# Mine\nfree text"


def test_missing_facts_go_into_their_sections_marked_and_are_reported() -> None:
    answer = "## Goal\n- port\n\n## Constraints & Preferences\n- (none)\n\n## Critical Context\n- Never use unsafe."
    repaired = repair(answer, FACTS, "history", HISTORY_HEADINGS)
    kinds = [a.kind for a in repaired.added]
    assert kinds == ["constraint", "lastRequest", "lastError", "identifier"]  # "Never use `unsafe`." was there
    constraints = repaired.text.split("## Constraints & Preferences\n", 1)[1].split("\n\n", 1)[0]
    assert constraints == f"- {MARK}Keine neuen Crates."
    critical = repaired.text.split("## Critical Context\n", 1)[1]
    assert f"- {MARK}Latest user request (verbatim): Fix the roundtrip test next." in critical
    assert "  assertion `left == right` failed\n  error: test failed" in critical
    assert critical.endswith(f"- {MARK}Identifiers: `parse()`, `src/lib.rs`")
    assert repair(repaired.text, FACTS, "history", HISTORY_HEADINGS).added == ()  # nothing twice


def test_missing_identifiers_are_listed_once() -> None:
    facts = Facts(identifiers=("parse()", "src/lib.rs", "v1.2.3"))
    repaired = repair("## Goal\n- fix parse()", facts, "history", HISTORY_HEADINGS)
    assert [(a.kind, a.text) for a in repaired.added] == [("identifier", "`src/lib.rs`, `v1.2.3`")]


def test_branch_and_turn_prefix_targets() -> None:
    branch = repair("## Goal\n- try a thing", FACTS, "branch", BRANCH_HEADINGS).text
    assert f"### Blocked\n- {MARK}Last error: bash failed:" in branch
    assert f"### In Progress\n- {MARK}Latest user request" in branch
    prefix = repair("## Original Request\n> do it", FACTS, "turnPrefix", TURN_PREFIX_HEADINGS).text
    assert prefix.split("## Context Needed to Continue\n", 1)[1].count(MARK) == 5


def test_a_user_format_gets_one_trailing_block() -> None:
    repaired = repair("My own format.", FACTS, "branch", ())
    assert repaired.text.startswith("My own format.\n\nKept by the fidelity gate:\n- [gate] Never use `unsafe`.")


def test_an_answer_with_every_fact_is_only_normalized() -> None:
    facts = Facts(constraints=("Keep it short.",), last_request="Go on", last_error="x failed:\nboom: error 3")
    answer = "## Goal\n- go on\n\n## Critical Context\n- keep it **short**.\n- boom: error 3"
    assert repair(answer, facts, "history", HISTORY_HEADINGS).added == ()


def test_fit_drops_the_oldest_items_of_the_longest_section_and_keeps_headings_and_gate_items() -> None:
    text = "## Goal\n- g\n\n## Done\n" + "\n".join(f"- item {n} " + "x" * 60 for n in range(40))
    text += f"\n- {MARK}must stay\n\n## Next\n1. n"
    fitted = fit_text(text, 300)
    assert tokens(fitted) <= 300
    assert "## Goal\n- g" in fitted and "## Next\n1. n" in fitted and f"{MARK}must stay" in fitted
    assert "item 0 " not in fitted and "item 39 " in fitted
    assert fitted.endswith("items left out to fit the size bound]")
    assert fit_text("short", 10) == "short"
    assert tokens(fit_text("#" * 1000, 5)) <= 5  # headings alone too big: cut

"""The offline summarizer over repeated compactions: earlier constraints, goals and TODOs are not trimmed away."""

from __future__ import annotations

from typing import Any

from pi_sessiond.compaction.prompts import SPLIT_TURN_SEPARATOR
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.offline import build_summary, parse_summary

Json = dict[str, Any]
CONSTRAINTS = [
    "Never commit directly to `main`.",
    "Les messages d'erreur doivent rester en anglais.",
    "Nutze keine Regex für das Parsen.",
    "La API pública no se toca.",
    "テストは必ず日本語のコメントなしで書いてください。",
]


def request(messages: list[Json], **kwargs: Any) -> SummaryRequest:
    return SummaryRequest(system_prompt="", prompt="", max_tokens=kwargs.pop("max_tokens", 13107),
                          messages=tuple(messages), **kwargs)


def user(text: str) -> Json:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def edit_turn(n: int) -> list[Json]:
    path = f"src/module_{n}/handler_{n}.py"
    call = {"type": "toolCall", "id": f"c{n}", "name": "edit", "arguments": {"path": path}}
    said = {"type": "text", "text": f"Now I will rework the handler number {n} so that its retry loop is simpler."}
    return [
        {"role": "assistant", "content": [said, call], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": f"c{n}", "toolName": "edit", "isError": False,
         "content": [{"type": "text", "text": "ok"}]},
    ]


def test_earlier_constraints_survive_rounds_whose_budget_is_tight() -> None:
    summary = build_summary(request([user("Port the scheduler. " + " ".join(CONSTRAINTS)), *edit_turn(0)]))
    for round_ in range(1, 10):
        messages = [user(f"Continue with part {round_} of the port, please.")]
        messages += [m for n in range(6) for m in edit_turn(round_ * 10 + n)]
        summary = build_summary(request(messages, previous_summary=summary, max_tokens=700))
        for constraint in CONSTRAINTS:
            assert constraint in summary, (round_, constraint)
        assert "Port the scheduler." in summary.split("## Constraints")[0]  # the first goal stays
        assert len(summary) <= 700 * 4 + 400
    assert "handler_0.py" not in summary  # narrative went first


def test_a_split_turn_parts_constraints_are_carried_and_a_replaced_request_is_no_goal() -> None:
    previous = ("## Goal\n- Port the scheduler\n\n## Constraints & Preferences\n(none)\n\n## Progress\n"
                "### Done\n(none)\n\n## Critical Context\n- Last user request (verbatim):\n  Split the queue module."
                + SPLIT_TURN_SEPARATOR + "## Original Request\n> Bitte keine neuen Abhängigkeiten.\n\n"
                "## Progress So Far\n(none)\n\n## Context Needed to Continue\n- [gate] Next: benchmark `enqueue()`")
    summary = build_summary(request([user("Now make the tests faster."), *edit_turn(1)], previous_summary=previous))
    sections = parse_summary(summary)
    assert "Bitte keine neuen Abhängigkeiten." in sections["constraints"]
    assert "benchmark `enqueue()`" in sections["next"]
    assert sections["goal"] == ["Port the scheduler"]  # a replaced request is no goal

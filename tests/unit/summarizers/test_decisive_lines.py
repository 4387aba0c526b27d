"""The last error keeps its decisive lines verbatim, wherever they are in a long output (own examples)."""

from __future__ import annotations

import pytest
from tests.unit.summarizers.error_outputs import EXAMPLES

from pi_sessiond.pipeline.requests import HISTORY_HEADINGS
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.cues import ERROR_LINES, decisive_lines
from pi_sessiond.summarizers.facts import extract_facts
from pi_sessiond.summarizers.gate import repair
from pi_sessiond.summarizers.offline import build_summary


def failing_run(output: str) -> list[dict[str, object]]:
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "make test"}}
    return [
        {"role": "user", "content": "Run the tests."},
        {"role": "assistant", "content": [call], "stopReason": "toolUse"},
        {"role": "toolResult", "toolCallId": "c1", "toolName": "bash", "isError": True,
         "content": [{"type": "text", "text": output}]},
    ]


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_the_decisive_lines_are_kept_verbatim(name: str) -> None:
    output, decisive = EXAMPLES[name]
    assert all(output.index(line) > 2000 for line in decisive)  # beyond a head-only cut
    kept = decisive_lines(output)
    assert len([ln for ln in kept.splitlines() if ln != "…"]) <= ERROR_LINES  # gaps marked, not counted
    for line in decisive:
        assert line in kept.splitlines(), (name, line)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_they_are_in_the_offline_summary_and_in_a_repaired_model_summary(name: str) -> None:
    output, decisive = EXAMPLES[name]
    messages = failing_run(output)
    offline = build_summary(SummaryRequest(system_prompt="", prompt="", max_tokens=4000, messages=tuple(messages)))
    repaired = repair("## Goal\n- run the tests", extract_facts(messages), "history", HISTORY_HEADINGS).text
    for text in (offline, repaired):
        critical = text.split("## Critical Context", 1)[1]
        for line in decisive:
            assert line.strip() in critical, (name, line)

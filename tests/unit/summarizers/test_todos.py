"""Open TODOs at the cut: carried by the offline summarizer and the gate, done ones dropped (own examples)."""

from __future__ import annotations

from typing import Any

from pi_sessiond.pipeline.requests import HISTORY_HEADINGS
from pi_sessiond.summarizers.base import SummaryRequest
from pi_sessiond.summarizers.facts import extract_facts
from pi_sessiond.summarizers.gate import MARK, repair
from pi_sessiond.summarizers.offline import build_summary, parse_summary
from pi_sessiond.summarizers.todos import open_todos

Json = dict[str, Any]


def said(text: str) -> Json:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], "stopReason": "stop"}


def edit(path: str) -> Json:
    call = {"type": "toolCall", "id": "e", "name": "edit", "arguments": {"path": path}}
    return {"role": "assistant", "content": [call], "stopReason": "toolUse"}


def bash(command: str) -> Json:
    call = {"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": command}}
    return {"role": "assistant", "content": [call], "stopReason": "toolUse"}


SESSION: list[Json] = [
    {"role": "user", "content": "Add a dry-run mode to the CLI."},
    said("Plan:\n1. Parse `--dry-run` in `cli/args.py`\n2. Skip writes in `cli/run.py`\n3. Document it"),
    said("TODO: update docs/cli.md with the new flag\nNext: add a test for `run(dry=True)`"),
    said("Checklist:\n- [x] read the config loader\n- [ ] handle `--dry-run` together with `--force`"),
    said("Als Nächstes: die Fehlermeldungen übersetzen.\nEnsuite : ajouter un test pour `--quiet`."),
    edit("cli/args.py"),
    bash("sed -i 's/a/b/' docs/cli.md"),
    said("New plan:\n1. ✅ Parse the flag\n2. Skip writes in `cli/run.py`\n3. Mention it in the changelog"),
    said("Added a test for `run(dry=True)`, it passes."),
]
OPEN = [
    "handle `--dry-run` together with `--force`",
    "die Fehlermeldungen übersetzen.",
    "ajouter un test pour `--quiet`.",
    "Skip writes in `cli/run.py`",
    "Mention it in the changelog",
]


def test_open_steps_are_found_and_done_ones_dropped() -> None:
    assert open_todos(SESSION) == OPEN
    # Only the newest numbered plan counts: the first plan's "Document it" was replaced.
    assert "Document it" not in open_todos(SESSION)


def test_nothing_said_nothing_carried() -> None:
    assert open_todos([said("All done, the tests pass."), edit("a.py")]) == []


def test_the_offline_summary_lists_the_open_steps_verbatim() -> None:
    summary = build_summary(SummaryRequest(system_prompt="", prompt="", max_tokens=4000, messages=tuple(SESSION)))
    steps = parse_summary(summary)["next"]
    for step in OPEN:
        assert step in steps
    for done in ("update docs/cli.md with the new flag", "add a test for `run(dry=True)`", "read the config loader"):
        assert done not in "\n".join(steps)


def test_the_gate_adds_the_open_steps_a_model_left_out() -> None:
    facts = extract_facts(SESSION)
    assert list(facts.todos) == OPEN
    answer = "## Goal\n- dry run\n\n## Next Steps\n1. Skip writes in `cli/run.py`"
    repaired = repair(answer, facts, "history", HISTORY_HEADINGS)
    assert [a.text for a in repaired.added if a.kind == "todo"] == [s for s in OPEN if "cli/run.py" not in s]
    next_steps = repaired.text.split("## Next Steps\n", 1)[1].split("\n\n", 1)[0]
    assert next_steps.splitlines()[0] == "1. Skip writes in `cli/run.py`"
    assert f"- {MARK}Mention it in the changelog" in next_steps


def test_lists_under_a_next_steps_label_and_still_to_do_sentences() -> None:
    messages = [
        said("The parser works now.\n\n**Next steps:**\n- wire `parse()` into `main.rs`\n"
             "- benchmark it on big files\n\nI still need to check the Windows line endings."),
        said("## Nächste Schritte\n1. Die README aktualisieren\n2. Version 0.5.0 taggen"),
        said("Wired `parse()` into `main.rs` and added it to the CLI — done."),
    ]
    assert open_todos(messages) == [
        "benchmark it on big files",
        "I still need to check the Windows line endings.",
        "Die README aktualisieren",
        "Version 0.5.0 taggen",
    ]


def todo_call(items: list[Any]) -> Json:
    call = {"type": "toolCall", "id": "t", "name": "todo_write", "arguments": {"todos": items}}
    return {"role": "assistant", "content": [call], "stopReason": "toolUse"}


def test_the_newest_todo_tool_list_gives_its_open_items() -> None:
    messages = [
        todo_call([{"content": "draft the schema", "status": "pending"}, {"content": "old idea", "status": "pending"}]),
        said("Working on it."),
        todo_call([{"content": "draft the schema", "status": "completed"},
                   {"content": "write the importer", "status": "in_progress"},
                   {"title": "Benchmark the importer", "done": False}, {"text": "drop v1", "state": "cancelled"}]),
    ]
    assert open_todos(messages) == ["write the importer", "Benchmark the importer"]

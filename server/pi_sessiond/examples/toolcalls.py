"""Tool calls of the example sessions and the results a Pi tool would give them.

A turn reads first and tests last; in between it edits, runs bash, reads and
writes files of the fake project in :mod:`~pi_sessiond.examples.content`. All
randomness comes from the caller's seeded generator, so the same draws give
the same calls and results.
"""

from __future__ import annotations

import random

from pi_sessiond.examples.content import (
    BASH,
    BASH_FAILURE,
    EDITS,
    IMPORTS,
    PROJECT_FILES,
    SNIPPETS,
    TEST_SNIPPET,
    Task,
    fill,
)


def file_text(rng: random.Random, min_chars: int) -> str:
    """Plausible TypeScript source of at least ``min_chars`` characters."""
    parts = [IMPORTS]
    size = len(IMPORTS)
    copy = 0
    while size < min_chars:
        snippet = rng.choice(SNIPPETS)
        if copy:
            snippet = snippet.replace("(req", f"{copy}(req", 1)
        parts.append(snippet + "\n")
        size += len(snippet) + 1
        copy += 1
    return "".join(parts)


def test_log(rng: random.Random, task: Task, min_chars: int) -> str:
    """A long, verbose test run (exercises tool-result truncation)."""
    lines = ["\n> acme-api@1.4.0 test\n> vitest run --reporter=verbose\n"]
    size = 0
    while size < min_chars:
        name = rng.choice(("rejects", "accepts", "paginates", "rounds", "retries", "logs"))
        line = f" ✓ {task.test} > {task.symbol} > {name} case {len(lines)} {rng.randint(1, 90)}ms"
        lines.append(line)
        size += len(line) + 1
    lines.append(f"\n Test Files  9 passed (9)\n      Tests  {len(lines) - 1} passed\n")
    return "\n".join(lines)


def _abs(cwd: str, rel: str) -> str:
    return f"{cwd}/{rel}"


def pick_call(
    rng: random.Random, task: Task, step: tuple[int, int, int], cwd: str
) -> tuple[str, dict[str, object], int]:
    """The ``(name, arguments, hint)`` of call ``k`` in ``step = (k, step, steps)``.

    ``hint`` selects the bash output template.  A turn reads first and tests last.
    """
    k, step_no, steps = step
    if step_no == 0:
        args: dict[str, object] = {"path": _abs(cwd, (task.file, task.test, "src/app.ts")[k])}
        if rng.random() < 0.3:
            args["offset"] = rng.randint(1, 12) * 20
            args["limit"] = rng.choice((40, 80, 120))
        return "read", args, 0
    if step_no == steps - 1:
        return "bash", {"command": fill(BASH[0][0], task, rng)}, 0
    kind = rng.choices(("edit", "bash", "read", "write"), (8, 5, 4, 2))[0]
    if kind == "edit":
        old, new = rng.choice(EDITS)
        return "edit", {"path": _abs(cwd, task.file), "oldText": old, "newText": new}, 0
    if kind == "write":
        content = TEST_SNIPPET.format(symbol=task.symbol, status=409)
        return "write", {"path": _abs(cwd, task.test), "content": content}, 0
    if kind == "read":
        return "read", {"path": _abs(cwd, rng.choice(PROJECT_FILES))}, 0
    hint = rng.randrange(len(BASH))
    return "bash", {"command": fill(BASH[hint][0], task, rng)}, hint


def _diff(rng: random.Random, old: str, new: str) -> str:
    start = rng.randint(12, 240)
    lines = ["     ..."]
    lines += [f"-{start + i:>4} {line}" for i, line in enumerate(old.splitlines())]
    lines += [f"+{start + i:>4} {line}" for i, line in enumerate(new.splitlines())]
    return "\n".join(lines)


def tool_result(
    rng: random.Random, name: str, args: dict[str, object], hint: int, task: Task, max_chars: int
) -> tuple[str, bool, dict[str, object] | None]:
    """The ``(text, isError, details)`` a Pi tool would return for this call."""
    path = str(args.get("path", ""))
    long_chars = rng.randint(max_chars // 4, max_chars) if rng.random() < 0.05 else 0
    if name == "read":
        text = file_text(rng, long_chars or rng.randint(300, min(2600, max_chars)))
        if "limit" in args:
            first, count = int(str(args["offset"])), int(str(args["limit"]))
            total = first + count + rng.randint(10, 400)
            text += (f"\n\n[Showing lines {first}-{first + count - 1} of {total}. "
                     f"Use offset={first + count} to continue]")
        return text, False, None
    if name == "edit":
        if rng.random() < 0.08:
            return (f"Could not find the exact text in {path}. The old text must match exactly "
                    "including all whitespace and newlines."), True, None
        old, new = str(args["oldText"]), str(args["newText"])
        text = (f"Successfully replaced text in {path}. "
                f"Changed {len(old)} characters to {len(new)} characters.")
        return text, False, {"diff": _diff(rng, old, new)}
    if name == "write":
        size = len(str(args["content"]).encode())
        return f"Successfully wrote {size} bytes to {path}", False, None
    if hint == 0 and rng.random() < 0.25:
        return fill(BASH_FAILURE, task, rng), True, None
    if hint == 0 and long_chars:
        return test_log(rng, task, long_chars), False, None
    return fill(BASH[hint][1], task, rng), False, None

"""Deterministic generator of realistic Pi session files (our own example data).

Shapes: ``linear`` (one coding chain), ``long`` (linear plus a ``compaction`` every
``compaction_every`` entries, default 2000), ``branchy`` (a tree with branch
summaries, labels and a session name), ``kitchen-sink`` (a small tree with every
entry type, role and edge case, then branchy turns up to ``entries``),
``example`` (the coherent demo session bundled as ``data/example.jsonl``) and
``pi16`` (a long chain with what Pi 1.6.0 writes: system messages and patches,
context edits, recovery omissions, ``usage`` entries, checkpointed and retain-none
compactions; :mod:`~pi_sessiond.examples.pi16`).
Entries are built by :class:`~pi_sessiond.examples.builder.Builder` from the
vocabulary in :mod:`~pi_sessiond.examples.content`.

Invariants (checked by ``tests/unit/test_generator.py``):

* everything comes from one ``random.Random(seed)`` and a fixed clock base, so the
  same arguments give byte-identical output;
* lines are compact JSON with keys in Pi's construction order (``write`` formats
  numbers as JavaScript's ``JSON.stringify`` does);
* entry timestamps strictly increase in file order; a message's ``timestamp``
  (Unix ms) lies after the previous entry's and no later than its own entry's;
* ids are 8 lowercase hex chars, unique; every ``parentId`` is null or an earlier id;
* ``entries`` is met within one or two entries: a turn is shortened to fit.

Regenerate the bundled example (run from the repository root)::

    .venv/bin/python -m pi_sessiond.examples.generator \\
        server/pi_sessiond/examples/data/example.jsonl --shape example --seed 7 --entries 200
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pi_protocol.base import JsonDict
from pi_sessiond.examples import content as C
from pi_sessiond.examples import pi16, toolcalls
from pi_sessiond.examples.builder import GPT, SONNET, Builder
from pi_sessiond.jsonio import jsontext

SHAPES = ("linear", "long", "branchy", "kitchen-sink", "example", "pi16")
EXAMPLE_ARGS: JsonDict = {"shape": "example", "seed": 7, "entries": 200}


def _chain(b: Builder, entries: int, after_turn: Callable[[int], None]) -> Iterator[JsonDict]:
    """Coding turns until ``entries`` entries; ``after_turn(n)`` adds the shape's extras."""
    rng, task_no, turn = b.rng, b.rng.randrange(len(C.TASKS)), 0
    yield from b.drain()
    prompt = ""
    while entries - b.count >= 2:
        if b.retry is not None:
            task_no, prompt, b.retry = b.retry, C.RETRY + C.TASKS[b.retry].prompt, None
        elif turn and rng.random() < 0.3:
            prompt = rng.choice([p for p in C.FOLLOW_UPS if p != prompt])
        else:
            task_no = (task_no + 1) % len(C.TASKS)
            prompt = C.TASKS[task_no].prompt
        b.turn(task_no, prompt, entries - b.count)
        turn += 1
        if entries - b.count >= 4:
            after_turn(turn)
        yield from b.drain()


def _linear_extras(b: Builder, every: int | None) -> Callable[[int], None]:
    def after(turn: int) -> None:
        if b.version == 2 and turn == 1:
            b.hook_message()
        if every and b.count - b.compacted_at >= every:
            b.compact()

    return after


def _branchy_extras(b: Builder) -> Callable[[int], None]:
    def after(turn: int) -> None:
        if b.version == 2 and turn == 1:
            b.hook_message()
        if turn == 1:
            b.add("session_info", {"name": b.rng.choice(C.SESSION_NAMES)})
        elif turn >= 3 and b.rng.random() < 0.3:
            b.branch(label=b.rng.random() < 0.4)
        elif b.rng.random() < 0.1:
            b.label(b.path[-1].id, b.rng.choice(C.LABELS))

    return after


def _example_extras(b: Builder) -> Callable[[int], None]:
    def after(turn: int) -> None:
        if turn == 1:
            b.add("session_info", {"name": C.SESSION_NAMES[0]})
        elif turn == 2:
            b.label(b.path[-1].id, "checkpoint")
        elif turn == 3:
            b.bash("git log --oneline -3", "a41c9e2 Reject duplicate emails\n"
                   "9be03f1 Add vitest\n17d5c2a Initial commit\n", 0)
        elif turn == 5:
            users = [i for i, n in enumerate(b.path) if n.kind == "user"]
            old_leaf = b.path[-1].id
            gone = b.rewind(users[-2] - 1)
            b.branch_summary(old_leaf, gone)
            b.retry = next(n.task for n in gone if n.task >= 0)
            b.label(b.path[-1].id, "try-2")
        elif turn == 7:
            b.add("custom_message", {}, lead={
                "customType": "todo-reminder", "content": "Open TODOs: pagination cursor tests",
                "display": True}, chars=35)
        elif turn == 8:
            b.label(b.path[-1].id, "tests green ✅")

    return after


def _sink_prelude(b: Builder) -> None:
    """Roles, content blocks, stop reasons and odd values, on the first branch."""
    rng, image = b.rng, {"type": "image", "data": C.PNG_1X1, "mimeType": "image/png"}
    b.start()
    b.add("session_info", {"name": "Kitchen sink 🚀 全部"})
    first = b.user(C.UNICODE_TEXT, 0)
    read = b.call("read", {"path": f"{b.cwd}/src/routes/users.ts"})
    b.assistant([b.thinking_block("Plan: read users.ts, then fix 東京 deploy 🚀"),
                 {"type": "text", "text": "Reading it."}, read], "toolUse")
    b.tool_result(read, toolcalls.file_text(rng, 900))
    null = b.call("ls", None)
    b.assistant([null], "toolUse")
    b.tool_result(null, 'Validation failed for tool "ls": arguments must be an object', True, {})
    b.assistant([{"type": "text", "text": ""}], "stop")
    shot = b.user([{"type": "text", "text": "What's wrong in this screenshot? 画面"}, image])
    view = b.call("read", {"path": f"{b.cwd}/docs/screenshot.png"})
    b.assistant([view], "toolUse")
    b.tool_result(view, "Read image file [image/png]", blocks=[image])
    b.assistant([b.thinking_block("The button overl", signed=False)], "aborted",
                error="Request was aborted.")
    b.user("continue")
    b.assistant([], "error", zero=True, error='400 {"type":"error","error":{"type":'
                '"invalid_request_error","message":"messages.12: `tool_use` ids were found '
                'without `tool_result` blocks immediately after"}}')
    b.user("try again, short answer")
    b.assistant([{"type": "text", "text": "The 🚀 icon overlaps the label; 余白 is 0px."}], "stop")
    b.label(first["id"], "start")
    b.label(first["id"], "start ✨ 開始")
    b.label(first["id"], None)
    b.label(shot["id"], "", extra={"x_future": 1})


def _sink_side_channels(b: Builder) -> None:
    """bashExecution, custom roles and entries, unknown types, a model switch."""
    image = {"type": "image", "data": C.PNG_1X1, "mimeType": "image/png"}
    b.bash("git status --short", " M src/routes/users.ts\n", 0)
    b.bash("npm test", C.fill(C.BASH_FAILURE, C.TASKS[0], b.rng), 1)
    b.bash("npm run dev", "listening on :3000\n", None, cancelled=True)
    b.bash("find . -name '*.ts'", "./src/app.ts\n" * 300, 0, truncated=True,
           full="/tmp/pi-bash-3f2a9c1e.log")
    b.bash("echo $SECRET_ISH", "not in context\n", 0, exclude=True)
    b.bash("true", "", 0)
    b.message("custom", {"customType": "git-status", "content": "On branch main 🌿",
                         "display": True, "details": {"ahead": 1}}, chars=17)
    b.message("custom", {"customType": "note", "content": [{"type": "text", "text": "ノート"},
                                                          image], "display": False}, chars=3)
    b.add("custom", {}, lead={"customType": "acme.todo-state", "data": {"open": ["paging"]}})
    b.add("custom", {}, lead={"customType": "acme.ping"})
    b.add("custom_message", {}, lead={"customType": "reminder", "content": "2 TODOs 📝",
                                      "display": True, "details": {"count": 2}}, chars=9)
    b.add("custom_message", {}, lead={"customType": "snapshot", "content": [
        {"type": "text", "text": "screen"}, image], "display": False}, chars=6)
    b.add("future_thing", {"payload": {"kind": "hologram", "v": 2}}, extra={"x_future": 1})
    b.model, b.thinking = GPT, "high"
    b.add("model_change", {"provider": GPT.provider, "modelId": GPT.id}, extra={"x_future": 1})
    b.add("thinking_level_change", {"thinkingLevel": b.thinking})
    b.user("Print both boundary fixtures", 1)
    calls = [b.call("bash", {"command": f"cat fixtures/{n}.txt"}) for n in ("exact", "split")]
    b.assistant(calls, "toolUse")
    b.tool_result(calls[0], C.exactly_2000_units())
    b.tool_result(calls[1], C.split_at_2000())
    b.assistant([{"type": "text", "text": "Both end in 🚀."}], "stop", task=1)


def _kitchen_sink(b: Builder) -> None:
    """A small tree using every entry type, role and edge case Pi can write."""
    _sink_prelude(b)
    _sink_side_channels(b)
    b.compact()
    fork = len(b.path) - 1
    b.turn(2, C.TASKS[2].prompt, 8)
    foreign = next(n.id for n in reversed(b.path) if n.kind == "user")
    old_leaf = b.path[-1].id
    b.rewind(fork)
    b.add("branch_summary", {"fromId": old_leaf, "summary": "", "fromHook": True})
    b.turn(3, C.TASKS[3].prompt, 6)
    b.add("compaction", {"summary": "## Goal\nForeign cut (extension)", "firstKeptEntryId":
                         foreign, "tokensBefore": 1234}, gap=(9_000, 30_000))
    b.model, b.thinking = SONNET, "off"
    b.add("model_change", {"provider": SONNET.provider, "modelId": SONNET.id})
    b.add("thinking_level_change", {"thinkingLevel": "off"})
    b.turn(4, C.TASKS[4].prompt, 6)
    old_leaf, users = b.path[-1].id, [i for i, n in enumerate(b.path) if n.kind == "user"]
    b.branch_summary(old_leaf, b.rewind(users[-1] - 1))
    b.turn(5, C.TASKS[5].prompt, 5)
    b.path, b.cache = [], 0  # Pi's resetLeaf(): the next entry is a new root
    b.user("Second root: started over from scratch")
    b.assistant([{"type": "text", "text": "Fresh start 🌱"}], "stop")
    b.add("session_info", {"name": ""})


def iter_lines(*, seed: int = 0, entries: int = 200, shape: str = "linear",
               compaction_every: int | None = None, version: int = 3,
               cwd: str = "/home/dev/projects/acme-api") -> Iterator[JsonDict]:
    """Yield the header then the entries of one session, a turn at a time.

    Raises ``ValueError`` at once (before anything is generated) for an unknown shape
    or version, or a shape that the version cannot express (v1: ``linear``/``long``
    only; v2: not ``kitchen-sink``/``example``).
    """
    if shape not in SHAPES or version not in (1, 2, 3):
        raise ValueError(f"unknown shape {shape!r} or version {version!r}")
    if (version == 1 and shape not in ("linear", "long")) or (
            version == 2 and shape in ("kitchen-sink", "example", "pi16")):
        raise ValueError(f"shape {shape!r} cannot be written as version {version}")
    return _lines(seed, entries, shape, compaction_every, version, cwd)


def _lines(seed: int, entries: int, shape: str, compaction_every: int | None, version: int,
           cwd: str) -> Iterator[JsonDict]:
    b = Builder(seed, version, cwd, max_result=1_800 if shape == "example" else 20_000)
    b.min_steps = 3 if shape == "example" else 1
    if shape == "kitchen-sink":
        sid = uuid.UUID(int=b.rng.getrandbits(128), version=4)
        b.header(parentSession=f"/home/dev/.pi/agent/sessions/--home-dev-projects-acme-api--/"
                 f"2025-11-02T17-03-11-902Z_{sid}.jsonl")
        _kitchen_sink(b)
        extras = _branchy_extras(b)
    else:
        b.header()
        b.start()
        every = 2_000 if shape == "long" and compaction_every is None else compaction_every
        if shape == "pi16":
            state = pi16.Pi16State()
            pi16.prelude(b, state)
            extras = pi16.extras(b, state, compaction_every or 600)
        elif shape == "branchy":
            extras = _branchy_extras(b)
        elif shape == "example":
            extras = _example_extras(b)
        else:
            extras = _linear_extras(b, every)
    yield from _chain(b, entries, extras)


def generate(*, seed: int = 0, entries: int = 200, shape: str = "linear",
             compaction_every: int | None = None, version: int = 3,
             cwd: str = "/home/dev/projects/acme-api") -> list[JsonDict]:
    """The whole session as a list of JSON objects, header first."""
    return list(iter_lines(seed=seed, entries=entries, shape=shape,
                           compaction_every=compaction_every, version=version, cwd=cwd))


# A number token in exponent form or an integral float ("1.0"); false hits in strings
# only cost the slow path.


def dumps(line: JsonDict) -> bytes:
    """One JSONL line as Pi writes it: ``JSON.stringify(entry) + "\\n"``."""
    return jsontext.dumps(line) + b"\n"


def write(path: str | Path, lines: Sequence[JsonDict]) -> None:
    """Write ``lines`` as a session file, one compact JSON object per line."""
    with open(path, "wb") as fh:
        fh.writelines(map(dumps, lines))


def write_stream(path: str | Path, **kwargs: Any) -> int:
    """Generate straight to ``path`` without holding the session in memory; returns lines."""
    count, lines = 0, iter_lines(**kwargs)  # validates before the file is created
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(dumps(line))
            count += 1
    return count


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pi_sessiond.examples.generator OUT.jsonl [--entries N] [--shape S] ...``"""
    parser = argparse.ArgumentParser(prog="python -m pi_sessiond.examples.generator",
                                     description="Write a deterministic example Pi session.")
    parser.add_argument("out", type=Path)
    parser.add_argument("--entries", type=int, default=200)
    parser.add_argument("--shape", choices=SHAPES, default="linear")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--compaction-every", type=int, default=None)
    parser.add_argument("--version", type=int, choices=(1, 2, 3), default=3)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    try:
        count = write_stream(args.out, seed=args.seed, entries=args.entries, shape=args.shape,
                             compaction_every=args.compaction_every, version=args.version)
    except ValueError as exc:
        parser.error(str(exc))
    took = time.perf_counter() - started
    print(f"wrote {count} lines, {args.out.stat().st_size} bytes to {args.out} in {took:.2f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

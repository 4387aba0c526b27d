"""Writes realistic Pi v3 session files with planted facts, and remembers where each fact sits.

A :class:`Planter` drives the examples :class:`~pi_sessiond.examples.builder.Builder`
(Pi's key order, ids, clock and usage) turn by turn: a user message carrying
the planted goal, constraints and request among neutral chatter, then tool-using
steps (reads, edits, writes, bash commands that move/edit/create/delete files,
test runs, an error whose decisive lines are at the end of a long output), then
an answer naming identifiers and open TODOs.

Contracts:

* every planted fact is a :class:`Fact` naming the entry that carries it;
* :meth:`Planter.sync` adopts the entries another writer (``pi-sessiond``)
  appended — a compaction, or a branch summary under an earlier entry — so the
  builder's path is the session's path and growth continues under the new leaf;
* the file is appended to, never rewritten.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from random import Random
from typing import Any

import orjson
from tests.fidelity import material as M
from tests.fidelity.heldout import Constraint, ErrorShape

from pi_sessiond.examples.builder import Builder, Node
from pi_sessiond.examples.generator import dumps

CLASSES = ("modifiedFile", "readFile", "constraint", "lastRequest", "lastError", "identifier", "goal", "todo",
           "decision", "preference")
TARGETS = ("modifiedFile", "constraint", "lastRequest", "lastError")
Json = dict[str, Any]


@dataclass(frozen=True)
class Fact:
    """One planted fact: its class, the strings a summary must contain (all of them), where it is.

    ``replaced``: what the fact replaces (an earlier preference); a summary keeps the fact only when
    that is gone or every line naming it says it was replaced (:func:`~tests.fidelity.score.score`).
    """

    cls: str
    needles: tuple[str, ...]
    entry_id: str
    lang: str = "-"
    note: str = ""
    replaced: tuple[str, ...] = ()


@dataclass
class Turn:
    """What one user turn plants. ``steps`` adds filler tool steps (the turn's size)."""

    lang: str
    request: tuple[str, str, str]  # text, match, note (the held-out id)
    constraints: Sequence[Constraint] = ()
    earlier: Sequence[Constraint] = ()  # overrides' first versions, said now, replaced later
    goal: tuple[str, str] | None = None
    reads: Sequence[str] = ()
    edits: Sequence[str] = ()
    writes: Sequence[str] = ()
    bash_ops: Sequence[tuple[str, ...]] = ()  # ("mv", a, b) | ("sed", f) | (">", f) | ("rm", f)
    error: ErrorShape | None = None
    error_first: bool = False  # the error right after the reads (before the filler steps), not at the end
    identifiers: Sequence[str] = ()
    todos: Sequence[str] = ()
    steps: int = 2
    paste: bool = False  # a long pasted log in the user message, constraints after it
    # The generator's own material (tests/fidelity/material.py), not the held-out list:
    directions: Sequence[tuple[str, str]] = ()  # (text, match): user directions, scored as constraints
    remarks: Sequence[str] = ()  # what the user observes or acknowledges: no direction
    prefers: Sequence[tuple[str, str, str]] = ()  # (text, match, match of the preference it replaces or "")
    decisions: Sequence[tuple[str, tuple[str, ...]]] = ()  # (assistant sentence, needles: choice and reason)
    said_ids: Sequence[tuple[str, str]] = ()  # (assistant sentence, the identifier it names in plain prose)
    plan: Sequence[tuple[str, str]] = ()  # (text, match): open next steps said in prose or as a numbered plan


@dataclass
class Planter:
    """Appends planted turns to ``path`` (a new session file) and keeps the facts."""

    path: Path
    seed: int
    b: Builder = field(init=False)
    rng: Random = field(init=False)
    facts: list[Fact] = field(default_factory=list)
    lines: int = 0

    def __post_init__(self) -> None:
        self.b = Builder(self.seed, 3, M.CWD)
        self.rng = self.b.rng
        self.b.header()
        self.b.start()
        self.path.write_bytes(b"")
        self.flush()

    @property
    def path_ids(self) -> list[str]:
        """Entry ids from the root to the leaf."""
        return [node.id for node in self.b.path]

    def fact(self, cls: str, needles: Sequence[str], entry: Json, lang: str = "-", note: str = "",
             replaced: Sequence[str] = ()) -> None:
        self.facts.append(Fact(cls, tuple(needles), str(entry["id"]), lang, note, tuple(replaced)))

    def flush(self) -> None:
        """Append what the builder made since the last flush."""
        data = b"".join(dumps(line) for line in self.b.drain())
        with self.path.open("ab") as out:
            out.write(data)
        self.lines += data.count(b"\n")

    def sync(self) -> list[Json]:
        """Adopt the lines another writer appended; returns them."""
        rows = [orjson.loads(line) for line in self.path.read_bytes().splitlines()[self.lines:]]
        for row in rows:
            ids = [node.id for node in self.b.path]
            if row.get("parentId") in ids:
                self.b.path = self.b.path[: ids.index(row["parentId"]) + 1]
            # a summary shrinks the context: later usage numbers start from a rough quarter of it
            self.b.path.append(Node(row["id"], self.b.count + 1, row["type"], self.b.ctx // 4))
            self.b.ids.add(row["id"])
            self.b.count += 1
            stamp = datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).timestamp()
            self.b.clock = max(self.b.clock, int(stamp * 1000) + 1000)
        self.lines += len(rows)
        return rows

    def reattach(self, gone: set[str], entry_id: str) -> None:
        """Facts of abandoned entries now live in the branch summary ``entry_id``."""
        self.facts = [Fact(f.cls, f.needles, entry_id if f.entry_id in gone else f.entry_id, f.lang, f.note,
                           f.replaced) for f in self.facts]

    # ---------------------------------------------------------------- one turn

    def turn(self, t: Turn) -> str:
        """The user message, the work, the answer; returns the user message's id."""
        user_id = self._user(t)
        self._step_reads(t.reads)
        if t.error is not None and t.error_first:
            self._error(t.error)
        for path in t.edits:
            self._tool("edit", {"path": f"{M.CWD}/{path}", "oldText": "BATCH = 500", "newText": "BATCH = 250"},
                       f"Successfully replaced text in {M.CWD}/{path}. Changed 11 characters to 11 characters.",
                       fact=("modifiedFile", path, "edit"))
        for path in t.writes:
            body = M.code_text(self.rng, self.rng.randint(600, 1800))
            self._tool("write", {"path": f"{M.CWD}/{path}", "content": body},
                       f"Successfully wrote {len(body.encode())} bytes to {M.CWD}/{path}",
                       fact=("modifiedFile", path, "write"))
        for op in t.bash_ops:
            self._bash_op(op)
        for _ in range(t.steps):
            self._filler_step()
        if t.error is not None and not t.error_first:
            self._error(t.error)
        self._answer(t)
        return user_id

    def _user(self, t: Turn) -> str:
        rng, sep = self.rng, "\n" if t.lang == "ja" else " "
        lead = [t.goal[0]] if t.goal else [rng.choice(M.CHATTER[t.lang])]
        rules = [c.earlier or "" for c in t.earlier] + [c.text for c in t.constraints]
        rules += [text for text, _ in t.directions] + [text for text, _, _ in t.prefers] + list(t.remarks)
        rng.shuffle(rules)
        ask, ids = t.request[0], [f"`{i}`" for i in t.identifiers]
        body = lead + ([f"Ref: {', '.join(ids)}."] if ids else [])
        if t.paste:
            body += [M.CHATTER[t.lang][2], "\n```\n" + M.passing_tests(rng, 40) + "\n```\n"]
        parts = [*body, *rules, ask] if rng.random() < 0.7 or t.goal else [*body, ask, *rules]
        entry = self.b.user(sep.join(parts))
        if t.goal:
            self.fact("goal", [t.goal[1]], entry, t.lang)
        for c in t.constraints:
            self.fact("constraint", [c.match], entry, c.lang, f"{c.id}:{c.kind}")
        for _, match in t.directions:
            self.fact("constraint", [match], entry, t.lang, "own:direction")
        for _, match, replaces in t.prefers:
            if replaces:  # the preference replaced is not scored: only that it is gone or marked
                self.fact("preference", [match], entry, t.lang, "replaces", [replaces])
        for ident in t.identifiers:
            self.fact("identifier", [ident], entry)
        self.fact("lastRequest", [t.request[1]], entry, t.lang, t.request[2])
        return str(entry["id"])

    def _tool(self, name: str, args: Json, result: str, *, error: bool = False,
              fact: tuple[str, str, str] | None = None, text: str | None = None) -> Json:
        call = self.b.call(name, args)
        blocks = ([{"type": "text", "text": text}] if text else []) + [call]
        entry = self.b.assistant(blocks, "toolUse")
        if fact:
            self.fact(fact[0], [fact[1]], entry, note=fact[2])
        details = {"diff": "-   1 BATCH = 500\n+   1 BATCH = 250"} if name == "edit" else None
        return self.b.tool_result(call, result, error, details)

    def _step_reads(self, paths: Sequence[str]) -> None:
        if not paths:
            return
        calls = [self.b.call("read", {"path": f"{M.CWD}/{p}"}) for p in paths]
        entry = self.b.assistant([{"type": "text", "text": "Let me read the relevant code first."}, *calls],
                                 "toolUse")
        for path in paths:
            self.fact("readFile", [path], entry, note="read")
        for call in calls:
            self.b.tool_result(call, M.code_text(self.rng, self.rng.randint(1500, 5000)))

    def _bash_op(self, op: tuple[str, ...]) -> None:
        kind, *files = op
        command = {"mv": f"git mv {files[0]} {files[-1]}",
                   "sed": f"sed -i 's/EXPORT_BATCH = 500/EXPORT_BATCH = 250/' {files[0]}",
                   ">": f"printf 'invoices.export\\ninvoices.retry\\n' > {files[0]}",
                   "rm": f"rm -f {files[0]}"}[kind]
        call = self.b.call("bash", {"command": command})
        entry = self.b.assistant([call], "toolUse")
        for path in files:
            self.fact("modifiedFile", [path], entry, note=f"bash {kind}")
        self.b.tool_result(call, "(no output)")

    def _filler_step(self) -> None:
        if self.rng.random() < 0.5:
            self._tool("bash", {"command": "pytest -q tests/unit"}, M.passing_tests(self.rng, self.rng.randint(20, 60)))
        else:
            path = self.rng.choice(M.READ_ONLY)
            self._tool("read", {"path": f"{M.CWD}/{path}"}, M.code_text(self.rng, self.rng.randint(2000, 6000)),
                       fact=("readFile", path, "read"))

    def _error(self, err: ErrorShape) -> None:
        noise = M.padding(self.rng, err.padding, self.rng.randint(40, 90))
        output = f"{err.head}\n{noise}\n{err.tail}\n\nCommand exited with code 1"
        result = self._tool("bash", {"command": err.command}, output, error=True,
                            text="Running it to see where it stands.")
        self.fact("lastError", err.match, result, note=err.shape)

    def _answer(self, t: Turn) -> None:
        lines = ["Done with this step."]
        lines += [f"This relies on `{ident}`." for ident in t.identifiers]
        said = [text for text, _ in t.decisions] + [text for text, _ in t.said_ids]
        self.rng.shuffle(said)
        lines += [" ".join(said)] if said else []
        if t.todos:
            lines += ["", "Still open:"] + [f"- {todo}" for todo in t.todos]
        if t.plan:
            lines += ["", *(text for text, _ in t.plan)]
        entry = self.b.assistant([{"type": "text", "text": "\n".join(lines)}], "stop")
        for todo in t.todos:
            self.fact("todo", [todo], entry)
        for _, match in t.plan:
            self.fact("todo", [match], entry, note="plan")
        for ident in t.identifiers:
            self.fact("identifier", [ident], entry)
        for _, ident in t.said_ids:
            self.fact("identifier", [ident], entry, note="prose")
        for _, needles in t.decisions:
            self.fact("decision", needles, entry)


def error_rng(seed: int) -> Random:
    """The RNG scenarios use to choose errors and files (independent of the builder's)."""
    return Random(seed * 7919 + 1)

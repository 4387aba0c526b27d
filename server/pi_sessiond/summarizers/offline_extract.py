"""What the offline summarizer reads out of Pi agent messages.

``extract(messages)`` walks the messages being summarized once, oldest first,
and returns an :class:`Extraction`: plain strings, ready to be placed under
the summary headings. No I/O, no model, no clock.

Invariants:

* Deterministic: the same messages give equal extractions (no set iteration,
  no time); every tuple is ordered oldest first.
* A tool call counts as done when its ``toolResult`` is not ``isError`` (or,
  as in branch summaries where Pi drops tool results, when it has no result).
  An error is *blocking* until a later success of the same key: ``(tool,
  path)`` for file tools, the tool name otherwise, ``model`` for an assistant
  message that stopped with ``error``, ``bash`` for a user ``!command``.
* Error texts are reduced to their decisive lines (:func:`~.cues.decisive_lines`:
  the traceback tail, the failing test and its assertion), verbatim.
* Files changed by a successful bash command (``mv``, ``rm``, ``sed -i``,
  redirects…, :mod:`.bashfiles`) are in ``done_paths`` (the command itself
  is one Done item; the file lists name each file).
* Constraints: every requirement sentence of every user message, whole
  messages scanned, by structural cues (:mod:`.cues`).
* Done files carry their full path exactly as the tool call wrote it.
* Next steps: the assistant's steps still open at the cut, verbatim
  (:func:`~.todos.open_todos`, shared with the fidelity gate's ``todo``
  facts), after "Finish: …" for an unfinished request.
* Identifiers: the exact values named in what the user and the assistant
  wrote (:func:`~.facts.identifiers_in`), newest last; the files a tool
  call names and the commands run are not identifiers (Done and the file
  lists name them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.summarizers.bashfiles import changed_paths
from pi_sessiond.summarizers.cues import DECISIVE, constraint_sentences, decisive_lines
from pi_sessiond.summarizers.decisions import decisions_in
from pi_sessiond.summarizers.facts import identifiers_in, latest_request, message_text
from pi_sessiond.summarizers.offline_text import (
    command_label,
    condense,
    is_inspection,
    is_request,
    request_summary,
    sentences,
    trim_block,
)
from pi_sessiond.summarizers.todos import open_todos

__all__ = ["Extraction", "extract", "message_text", "trim_block"]

REQUEST_CHARS = 1500
COMMITS_KEPT = 10
COMMANDS_KEPT = 8
_FILE_TOOLS = frozenset({"read", "edit", "write"})
_COMMIT = re.compile(r"git commit\b.*?-m\s+([\"'])(.+?)\1", re.S)
_PLAN_SENTENCE = re.compile(
    r"^(?:now |next,? |then )?(?:I (?:still )?need to|next I'll|still need to|remaining:)", re.I
)


@attrs.frozen
class Extraction:
    """Everything the summary sections are built from, oldest first."""

    requests: tuple[str, ...] = ()
    first_request: str = ""
    last_request: str = ""
    constraints: tuple[str, ...] = ()
    done: tuple[str, ...] = ()
    done_paths: tuple[str, ...] = ()
    in_progress: tuple[str, ...] = ()
    blocked: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    next_steps: tuple[str, ...] = ()
    errors: tuple[str, ...] = ()
    identifiers: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    finished: bool = True
    last_said: str = ""


@attrs.define
class _FileWork:
    path: str
    edits: int = 0
    writes: int = 0
    note: str = ""
    last: int = 0

    def label(self) -> str:
        parts = [f"{self.edits} edit{'s' if self.edits != 1 else ''}"] if self.edits else []
        if self.writes:
            parts.append("written" if self.writes == 1 else f"written {self.writes}×")
        text = f"`{self.path}` ({', '.join(parts)})"
        return f"{text}: {self.note}" if self.note else text


@attrs.define
class _Scan:
    """Mutable state of one pass over the messages."""

    calls: dict[str, tuple[int, str, JsonDict, str]] = attrs.field(factory=dict)
    files: dict[str, _FileWork] = attrs.field(factory=dict)
    bash_paths: dict[str, None] = attrs.field(factory=dict)
    commands: dict[str, tuple[int, int]] = attrs.field(factory=dict)
    failures: dict[str, tuple[int, str]] = attrs.field(factory=dict)
    errors: list[str] = attrs.field(factory=list)
    user_texts: list[tuple[int, str]] = attrs.field(factory=list)
    assistant_texts: list[tuple[int, str]] = attrs.field(factory=list)
    identifiers: dict[str, int] = attrs.field(factory=dict)
    notes: list[str] = attrs.field(factory=list)
    last_stop: str = ""
    last_role: str = ""

    def add(self, index: int, msg: JsonDict) -> None:
        role = msg.get("role")
        handler = {
            "user": self._user,
            "assistant": self._assistant,
            "toolResult": self._tool_result,
            "bashExecution": self._bash_execution,
            "branchSummary": self._summary,
            "compactionSummary": self._summary,
        }.get(role if isinstance(role, str) else "")
        if handler is not None:
            handler(index, msg)
            self.last_role = str(role)

    def _user(self, index: int, msg: JsonDict) -> None:
        text = message_text(msg).strip()
        if text:
            self.user_texts.append((index, text))
            self._mention(index, request_summary(text))

    def _assistant(self, index: int, msg: JsonDict) -> None:
        self.last_stop = str(msg.get("stopReason", ""))
        text = message_text(msg).strip()
        if text:
            self.assistant_texts.append((index, text))
            self._mention(index, text)
        if self.last_stop == "error":
            self._fail(index, "model", "Model error: " + decisive_lines(str(msg.get("errorMessage") or "")))
        else:
            self.failures.pop("model", None)
        for block in msg.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "toolCall":
                self._call(index, block, text)

    def _call(self, index: int, block: JsonDict, text: str) -> None:
        raw = block.get("arguments")
        args: JsonDict = raw if isinstance(raw, dict) else {}
        note = _note(text)
        self.calls[str(block.get("id", ""))] = (index, str(block.get("name", "")), args, note)

    def _tool_result(self, index: int, msg: JsonDict) -> None:
        call = self.calls.pop(str(msg.get("toolCallId", "")), None)
        _, name, args, note = call or (index, str(msg.get("toolName", "")), {}, "")
        key = _failure_key(name, args)
        if msg.get("isError"):
            label = f"`{name}` on `{args['path']}`" if name in _FILE_TOOLS and args.get("path") else f"`{name}`"
            if name == "bash" and isinstance(args.get("command"), str):
                label += f" (`{command_label(args['command'])}`)"
            self._fail(index, key, f"{label} failed: " + decisive_lines(message_text(msg)))
            return
        self.failures.pop(key, None)
        self._succeed(index, name, args, note)

    def finish(self) -> None:
        """Calls without a result (Pi drops tool results from branch summaries) count as done."""
        for index, name, args, note in self.calls.values():
            self._succeed(index, name, args, note)
        self.calls.clear()

    def _succeed(self, index: int, name: str, args: JsonDict, note: str) -> None:
        path = args.get("path")
        if name in ("edit", "write") and isinstance(path, str) and path:
            work = self.files.pop(path, None) or _FileWork(path)
            work.edits += name == "edit"
            work.writes += name == "write"
            work.note, work.last = note or work.note, index
            self.files[path] = work
        elif name == "bash" and isinstance(args.get("command"), str):
            self._command(index, args["command"])

    def _command(self, index: int, command: str) -> None:
        self.bash_paths.update(dict.fromkeys(changed_paths(command)))
        commit = _COMMIT.search(command)
        label = f"Committed: {condense(commit.group(2), 120)}" if commit else command_label(command)
        if not label or (not commit and is_inspection(label)):
            return
        count, _ = self.commands.pop(label, (0, 0))
        self.commands[label] = (count + 1, index)

    def _bash_execution(self, index: int, msg: JsonDict) -> None:
        command = str(msg.get("command", ""))
        code = msg.get("exitCode")
        if msg.get("cancelled") or (isinstance(code, int) and code != 0):
            output = decisive_lines(str(msg.get("output") or ""))
            self._fail(index, "bash", f"`!{command_label(command)}` (run by the user) exited with {code}: {output}")
        else:
            self.failures.pop("bash", None)
            self._command(index, command)

    def _summary(self, index: int, msg: JsonDict) -> None:
        text = str(msg.get("summary") or "")
        goal = re.search(r"^## Goal\n+(.+)$", text, re.M)
        kind = "Explored branch" if msg.get("role") == "branchSummary" else "Earlier summary"
        self.notes.append(f"{kind}: {condense(goal.group(1) if goal else text, 200)}")

    def _fail(self, index: int, key: str, text: str) -> None:
        self.failures.pop(key, None)
        self.failures[key] = (index, text)
        self.errors.append(text)

    def _mention(self, index: int, text: str) -> None:
        for found in identifiers_in(text):
            self.identifiers.pop(found, None)
            self.identifiers[found] = index


def _note(text: str) -> str:
    """Why a tool was called: the assistant's last sentence before the call."""
    said = sentences(text)
    if not said:
        return ""
    last = said[-1].rstrip(":")
    return condense(last if len(last.split()) >= 4 else " ".join(said), 120)


def _failure_key(name: str, args: JsonDict) -> str:
    path = args.get("path")
    return f"{name}:{path}" if name in _FILE_TOOLS and isinstance(path, str) else name


def _dedupe(items: Iterable[str]) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        key = " ".join(item.lower().split())
        if item and key not in seen:
            seen[key] = item
    return list(seen.values())


def _requests(scan: _Scan) -> tuple[list[str], str, int]:
    asked = [(i, t) for i, t in scan.user_texts if is_request(t)] or scan.user_texts[-1:]
    if not asked:
        return [], "", -1
    last_index = asked[-1][0]
    latest = latest_request([t for _, t in scan.user_texts]) or trim_block(asked[-1][1], REQUEST_CHARS)
    return _dedupe(request_summary(t) for _, t in asked), latest, last_index


def _decisions(scan: _Scan) -> list[str]:
    return decisions_in(text for _, text in scan.assistant_texts)


def _plan(scan: _Scan, since: int, messages: Sequence[JsonDict]) -> list[str]:
    """The assistant's still-open steps (:func:`~.todos.open_todos`: its newest numbered plan, ``TODO:``
    / ``Next:`` items, unticked boxes — done ones dropped), then its recent "still need to" sentences."""
    steps = list(open_todos(messages))
    recent = [t for i, t in scan.assistant_texts[-2:] if i > since]
    said = [condense(s, 160) for t in recent for s in sentences(t) if _PLAN_SENTENCE.match(s)]
    return steps + [s for s in said if not any(step.lower() in s.lower() for step in steps)]


def extract(messages: Sequence[JsonDict], focus: Iterable[str] = ()) -> Extraction:
    """Read requests, constraints, progress, decisions, errors and identifiers from ``messages``.

    Commands and commits beyond the kept number survive when they contain a ``focus`` word.
    """
    scan = _Scan()
    for index, msg in enumerate(messages):
        if isinstance(msg, dict):
            scan.add(index, msg)
    scan.finish()
    requests, last_request, last_index = _requests(scan)
    finished = scan.last_role == "assistant" and scan.last_stop == "stop"
    current = requests[-1] if requests else ""
    in_progress: list[str] = []
    if not finished and current:
        in_progress.append(current + (" (interrupted)" if scan.last_stop == "aborted" else ""))
        in_progress += [condense(t, 200) for i, t in scan.assistant_texts[-2:] if i > last_index]
    blocked = [headline(text) for _, text in sorted(scan.failures.values())]
    done = _done(scan, finished, current, tuple(focus))
    steps = ([f"Finish: {current}"] if in_progress else []) + _plan(scan, last_index, messages)
    steps += [f"Resolve: {b}" for b in blocked]
    first = next((t for _, t in scan.user_texts if is_request(t)), scan.user_texts[0][1] if scan.user_texts else "")
    return Extraction(
        requests=tuple(requests),
        first_request=first,
        last_request=last_request,
        constraints=tuple(_dedupe(_constraints(scan))),
        done=tuple(done),
        done_paths=tuple(dict.fromkeys([*scan.files, *scan.bash_paths])),
        in_progress=tuple(_dedupe(in_progress)),
        blocked=tuple(_dedupe(blocked)),
        decisions=tuple(_decisions(scan)),
        next_steps=tuple(_dedupe(steps)),
        errors=tuple(scan.errors[-3:]),
        identifiers=tuple(k for k, _ in sorted(scan.identifiers.items(), key=lambda kv: kv[1])),
        notes=tuple(scan.notes),
        finished=finished,
        last_said=condense(scan.assistant_texts[-1][1], 240) if scan.assistant_texts else "",
    )


def headline(error: str) -> str:
    """An error on one line: its first line, and its last decisive line when that is another one."""
    lines = [ln.strip() for ln in error.splitlines() if ln.strip() and ln.strip() != "…"]
    if not lines:
        return ""
    decisive = [ln for ln in lines[1:] if DECISIVE.search(ln)] or lines[-1:]
    last = decisive[-1] if len(lines) > 1 else ""
    head = lines[0] if len(lines[0]) > 2 + lines[0].find("failed:") + len("failed:") else lines[0].rstrip(" .")
    return condense(head + (" … " + last if last and last != lines[0] else ""), 300)


def _constraints(scan: _Scan) -> Iterable[str]:
    """Every requirement sentence of every user message, whole messages scanned (:mod:`.cues`)."""
    for _, text in scan.user_texts:
        yield from constraint_sentences(text)


def _kept(items: list[tuple[int, str]], limit: int, focus: tuple[str, ...]) -> list[tuple[int, str]]:
    return [it for n, it in enumerate(items) if n >= len(items) - limit or any(w in it[1].lower() for w in focus)]


def _done(scan: _Scan, finished: bool, current: str, focus: tuple[str, ...]) -> list[str]:
    """Every edited/written file, the last commits and the last other commands, in time order."""
    timed = [(w.last, w.label()) for w in scan.files.values()]
    commits = [(last, label) for label, (_, last) in scan.commands.items() if label.startswith("Committed:")]
    others = [
        (last, f"Ran `{label}`" + (f" ({n}×)" if n > 1 else ""))
        for label, (n, last) in scan.commands.items()
        if not label.startswith("Committed:")
    ]
    timed += _kept(commits, COMMITS_KEPT, focus) + _kept(others, COMMANDS_KEPT, focus)
    done = [text for _, text in sorted(timed, key=lambda t: t[0])]
    if finished and current:
        done.append(f"Answered: {current}")
    return done

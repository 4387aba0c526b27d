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
* Error texts are kept verbatim apart from trimming (``ERROR_CHARS``).
* Done files carry their full path exactly as the tool call wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

JsonDict = dict[str, Any]

ERROR_CHARS = 600
REQUEST_CHARS = 1500
COMMITS_KEPT = 10
COMMANDS_KEPT = 8
_FILE_TOOLS = frozenset({"read", "edit", "write"})
_INSPECT = re.compile(
    r"(?:ls|cat|grep|rg|find|head|tail|wc|echo|pwd|which|tree|file|stat|sed -n|git (?:status|diff|log|show))\b"
)
_CD_PREFIX = re.compile(r"^\s*cd\s+\S+\s*(?:&&|;|\n)\s*")
_OUTPUT_FILTER = re.compile(r"\s+2>&1|\s*\|\s*(?:head|tail|grep)\b.*$")
_COMMIT = re.compile(r"git commit\b.*?-m\s+([\"'])(.+?)\1", re.S)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)$", re.M)
_ERROR_LINE = re.compile(r"^\s*(?:\w*(?:Error|Exception)\b|Traceback|panic:|error\b|ERR!)", re.M)
_ACTION = re.compile(
    r"\b(?:add|fix|move|remove|remoev|delete|rename|refactor|implement|read|tackle|make|create|update|write|"
    r"split|change|build|run|test|check|investigate|commit|explain|suggest|use|continue|clean|improve|"
    r"please|let's|need|want|should|must|can we|can you|could you|try|tell|show|plan)\b",
    re.I,
)
_CONSTRAINT = re.compile(
    r"\b(?:must|never|don't|do not|always|prefer|keep|without|only|should(?:n't)?|avoid|make sure|"
    r"need(?:s)? to be|has to|have to|instead of|no more than|at most|at least)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(?:I'll|I will|let's|we'll|we will|instead|decided|decide to|switch(?:ed|ing)? to|going with|"
    r"go with|the fix is|the approach|better to|rather than|we can have|we should|use `)",
    re.I,
)
_TRIVIAL_DECISION = re.compile(
    r"\b(?:I'll|I will|let's) (?:now |first |also )?"
    r"(?:check|look|read|run|verify|see|test|try|start|implement|commit)\b",
    re.I,
)
_RATIONALE = re.compile(r"\s(?:because|since|so that|to avoid)\s", re.I)
_PLAN_SENTENCE = re.compile(
    r"^(?:now |next,? |then )?(?:I (?:still )?need to|next I'll|still need to|remaining:)", re.I
)
_IDENTIFIER = re.compile(r"`([^`\n]{2,100})`|(?<![\w/])([A-Za-z_][\w.]*\(\))|((?:[~@]?/)?(?:[\w.-]+/)+[\w.-]+\.\w+)")


@attrs.frozen
class Extraction:
    """Everything the summary sections are built from, oldest first."""

    requests: tuple[str, ...] = ()
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


def message_text(msg: JsonDict) -> str:
    """A message's text: a string content, or its text blocks joined without separator."""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def condense(text: str, limit: int = 160) -> str:
    """Whitespace collapsed, cut at a sentence or word boundary to at most ``limit`` chars."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    stop = max(cut.rfind(". "), cut.rfind("? "), cut.rfind("! "))
    if stop >= limit // 2:
        return cut[: stop + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut).rstrip(" ,;:") + "…"


def trim_block(text: str, limit: int) -> str:
    """``text`` stripped, cut to ``limit`` chars with a note saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return text[:limit].rstrip() + f"\n[… {len(text) - limit} more characters]"


def _codeish(line: str) -> bool:
    if line[:1] in "{[<>$➜~|#" or line.startswith("at ") or line.endswith((";", "{", "}")) or " " not in line:
        return True
    plain = sum(c.isalnum() or c.isspace() for c in line)
    return plain < 0.75 * len(line)


def request_summary(text: str) -> str:
    """A user message condensed to what was asked (pasted logs reduced to their error line)."""
    lines = [ln.strip() for ln in text.splitlines()]
    prose: list[str] = []
    for line in lines:
        if not line:
            continue
        if _codeish(line):
            if prose:
                break
            continue
        prose.append(line.lstrip("-*• "))
    error = _ERROR_LINE.search(text)
    if error and not is_request(" ".join(prose)) and len(prose) * 2 < len([ln for ln in lines if ln]):
        line = text[error.start() :].strip().splitlines()[0]
        return "Reported error: " + condense(line)
    return condense(" ".join(prose) if prose else text)


def is_request(text: str) -> bool:
    """True for a user message that asks for something (not "ok", "wow", "yo")."""
    words = text.split()
    if len(words) < 2:
        return False
    return bool(_ACTION.search(text)) or ("?" in text and len(words) >= 5) or len(words) >= 12


def sentences(text: str) -> list[str]:
    """Non-empty sentences / lines of ``text``."""
    return [s.strip() for s in _SENTENCE.split(text) if s.strip()]


def command_label(command: str) -> str:
    """A bash command reduced to one readable line: ``cd`` prefix dropped, a script named by its comment."""
    body = _CD_PREFIX.sub("", command, count=1).strip()
    first = next((ln.strip() for ln in body.splitlines() if ln.strip()), "")
    first = _OUTPUT_FILTER.sub("", first).strip()
    if first.startswith("#"):
        return "script: " + condense(first.lstrip("# "), 100)
    return condense(first, 100)


def is_inspection(label: str) -> bool:
    """Commands that only look at things (``ls``, ``grep``, ``git status``…) are not progress."""
    return _INSPECT.match(label) is not None


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
            self._fail(index, "model", "Model error: " + trim_block(str(msg.get("errorMessage") or ""), ERROR_CHARS))
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
        path = args.get("path")
        if isinstance(path, str) and path:
            self.identifiers.pop(path, None)
            self.identifiers[path] = index

    def _tool_result(self, index: int, msg: JsonDict) -> None:
        call = self.calls.pop(str(msg.get("toolCallId", "")), None)
        _, name, args, note = call or (index, str(msg.get("toolName", "")), {}, "")
        key = _failure_key(name, args)
        if msg.get("isError"):
            label = f"`{name}` on `{args['path']}`" if name in _FILE_TOOLS and args.get("path") else f"`{name}`"
            if name == "bash" and isinstance(args.get("command"), str):
                label += f" (`{command_label(args['command'])}`)"
            self._fail(index, key, f"{label} failed: " + trim_block(message_text(msg), ERROR_CHARS))
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
        commit = _COMMIT.search(command)
        label = f"Committed: {condense(commit.group(2), 120)}" if commit else command_label(command)
        if not label or (not commit and is_inspection(label)):
            return
        count, _ = self.commands.pop(label, (0, 0))
        self.commands[label] = (count + 1, index)
        if not commit:
            self.identifiers.pop(label, None)
            self.identifiers[label] = index

    def _bash_execution(self, index: int, msg: JsonDict) -> None:
        command = str(msg.get("command", ""))
        code = msg.get("exitCode")
        if msg.get("cancelled") or (isinstance(code, int) and code != 0):
            output = trim_block(str(msg.get("output") or ""), ERROR_CHARS)
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
        for match in _IDENTIFIER.finditer(text):
            found = next(g for g in match.groups() if g)
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
    last_index, last_text = asked[-1]
    return _dedupe(request_summary(t) for _, t in asked), trim_block(last_text, REQUEST_CHARS), last_index


def _decisions(scan: _Scan) -> list[str]:
    found = []
    for _, text in scan.assistant_texts:
        for sentence in sentences(text):
            if len(sentence.split()) >= 6 and _DECISION.search(sentence) and not _TRIVIAL_DECISION.search(sentence):
                parts = _RATIONALE.split(condense(sentence, 200), maxsplit=1)
                found.append(f"**{parts[0].rstrip(' :.')}**" + (f": {parts[1]}" if len(parts) > 1 else ""))
    return _dedupe(found)


def _plan(scan: _Scan, since: int) -> list[str]:
    steps: list[str] = []
    for _, text in reversed(scan.assistant_texts):
        numbered = _NUMBERED.findall(text)
        if len(numbered) >= 2:
            steps = [condense(s, 160) for s in numbered[:6]]
            break
    recent = [t for i, t in scan.assistant_texts[-2:] if i > since]
    steps += [condense(s, 160) for t in recent for s in sentences(t) if _PLAN_SENTENCE.match(s)]
    return steps


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
    blocked = [text.split("\n")[0] for _, text in sorted(scan.failures.values())]
    done = _done(scan, finished, current, tuple(focus))
    steps = ([f"Finish: {current}"] if in_progress else []) + _plan(scan, last_index)
    steps += [f"Resolve: {b}" for b in blocked]
    return Extraction(
        requests=tuple(requests),
        last_request=last_request,
        constraints=tuple(_dedupe(_constraints(scan))),
        done=tuple(done),
        done_paths=tuple(scan.files),
        in_progress=tuple(_dedupe(in_progress)),
        blocked=tuple(_dedupe(blocked)),
        decisions=tuple(_decisions(scan)),
        next_steps=tuple(_dedupe(steps)),
        errors=tuple(scan.errors[-3:]),
        identifiers=tuple(k for k, _ in sorted(scan.identifiers.items(), key=lambda kv: kv[1])),
        notes=tuple(scan.notes),
        finished=finished,
    )


def _constraints(scan: _Scan) -> Iterable[str]:
    for _, text in scan.user_texts:
        for sentence in sentences(request_summary(text)):
            if _CONSTRAINT.search(sentence):
                yield condense(sentence, 200)


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

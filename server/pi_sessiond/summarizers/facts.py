"""The hard facts of a summarized range: what no summary may lose.

``extract_facts(messages)`` reads Pi agent messages (oldest first) and returns
:class:`Facts`: read and modified files, the user's explicit constraints and
preferences, the latest user request, the last error with its decisive lines
and the exact identifiers the work relies on. The offline summarizer builds
on it and the fidelity gate (:mod:`.gate`) checks every summarizer's answer
against it.

Invariants:

* Pure and deterministic: no I/O, no clock, no set iteration; every tuple is
  in first-seen order (files) or oldest first (the rest).
* Files: ``read``/``edit``/``write`` tool calls with a string ``path``, the
  same calls recorded in a codemode result's ``nestedCalls.calls``, and the
  paths a ``bash`` call (or a user ``!command``) changes
  (:func:`~.bashfiles.changed_paths`). A modified file is never also listed
  as read; a relative name a bash command used for a file a tool call named
  with its folders is not listed again.
* Constraints are, recall first, every sentence or list item of the user
  messages that directs the work (code blocks and pasted logs skipped; the
  whole message scanned; :mod:`.cues`), verbatim, in order, de-duplicated,
  never chosen by one language's words; at most ``CONSTRAINT_CHARS``
  characters (:func:`bounded`: what is left out is counted in a last item).
* The last error is the newest failing tool result, failed user command,
  model error or error output pasted by the user, reduced to its decisive
  lines (:func:`decisive_lines`).
* TODOs: the assistant's next steps still open at the end of the range
  (:func:`~.todos.open_todos`). Decisions: the newest ``DECISIONS_KEPT`` the
  assistant stated with their reason (:mod:`.decisions`). ``goals`` is empty
  here: only an earlier summary's Goal items are facts (:mod:`.carry`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

import attrs

from pi_protocol.base import JsonDict
from pi_sessiond.summarizers.bashfiles import changed_paths
from pi_sessiond.summarizers.cues import constraint_sentences, cue_strength, decisive_lines
from pi_sessiond.summarizers.decisions import decisions_in
from pi_sessiond.summarizers.revise import SUPERSEDED as SUPERSEDED
from pi_sessiond.summarizers.revise import revised_within
from pi_sessiond.summarizers.segment import pasted_of, prose_of
from pi_sessiond.summarizers.todos import open_todos

REQUEST_CHARS = 1500
CONSTRAINT_CHARS = 16_000
LEFT_OUT = "… more user directions not listed (size bound): "
# A pasted output that reports a failure (any tool or language).
_FAILURE = re.compile(
    r"Traceback \(most recent call last\)|^\s*(?:\w+(?:Error|Exception)|error(?:\[\w+\])?|fatal|FAILED?)\b[:\s]"
    r"|panicked at|^\s*●\s|\bexit(?:ed with)? (?:code|status) [1-9]|AssertionError",
    re.M | re.I,
)
IDENTIFIERS_KEPT = 40
DECISIONS_KEPT = 8
_IDENTIFIER = re.compile(
    r"`([^`\n]{2,120})`"
    r"|(https?://[^\s)>\]\"']+)"
    r"|(?<![\w/.-])((?:~|\.{1,2})?/?(?:[\w@.-]+/)+[\w@.-]+\.\w+)"
    r"|(?<![\w.:-])([a-z][\w.-]*:v?\d[\w.-]*\w)"  # an image or package tag: name:1.2-rc1
    r"|(?<![\w.])(v?\d+\.\d+\.\d+(?:[-+][\w.]+)?)\b"
    r"|(?<![\w.])([A-Za-z_]\w*(?:\.\w+)*\(\))"
    r"|(?<![\w.-])([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)(?![\w-])"  # a constant or environment key: EXPORT_TIMEOUT_MS
    r"|(?<![\w./-])([a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*){2,})(?![\w(/-])"  # a dotted key: a.b.c
    r"|(?<![\w./-])((?=[a-z0-9_]*\d)(?=[a-z0-9_]*[a-z])[a-z0-9]+_[a-z0-9_]+)(?![\w-])"  # job_7f3a91, 0042_add_x
    r"|(?<![\w-])((?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40})(?![\w-])"  # a commit hash
)


@attrs.frozen
class Facts:
    """Everything a summary of the range must still say, oldest first."""

    read_files: tuple[str, ...] = ()
    modified_files: tuple[str, ...] = ()
    bash_modified: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    last_request: str = ""
    last_error: str = ""
    identifiers: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    todos: tuple[str, ...] = ()
    goals: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()  # directions and decisions a later one revised: no summary repeats them


def message_text(msg: JsonDict) -> str:
    """A message's text: a string content, or its text blocks joined without separator."""
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


@attrs.define
class _Files:
    read: dict[str, None] = attrs.field(factory=dict)
    modified: dict[str, None] = attrs.field(factory=dict)
    by_tool: dict[str, None] = attrs.field(factory=dict)
    by_bash: dict[str, None] = attrs.field(factory=dict)

    def call(self, name: object, args: object) -> None:
        if not isinstance(args, dict):
            return
        path = args.get("path")
        if isinstance(path, str) and path:
            if name == "read":
                self.read.setdefault(path, None)
            elif name in ("edit", "write"):
                self.modified.setdefault(path, None)
                self.by_tool.setdefault(path, None)
        command = args.get("command")
        if name == "bash" and isinstance(command, str):
            self.bash(command)

    def bash(self, command: str) -> None:
        for path in changed_paths(command):
            self.modified.setdefault(path, None)
            self.by_bash.setdefault(path, None)

    def freeze(self) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        # a relative name bash used for a file a tool call named in full is the same file: named once
        tools = [p for p in self.by_tool if "/" in p]
        bash = [p for p in self.by_bash
                if p not in self.by_tool and not any(t.endswith("/" + p.removeprefix("./")) for t in tools)]
        modified = [p for p in self.modified if p in self.by_tool or p in bash]
        read = tuple(p for p in self.read if p not in self.modified)
        return read, tuple(modified), tuple(bash)


def _calls(msg: JsonDict) -> Iterator[tuple[object, object]]:
    role = msg.get("role")
    if role == "assistant" and isinstance(msg.get("content"), list):
        for block in msg["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall":
                yield block.get("name"), block.get("arguments")
    elif role == "toolResult":
        nested = msg.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
        for call in calls if isinstance(calls, list) else ():
            if isinstance(call, dict):
                yield call.get("name"), call.get("arguments")


def _error_of(msg: JsonDict) -> str:
    """The decisive lines of ``msg`` when it reports a failure, else ``""``."""
    role = msg.get("role")
    if role == "toolResult" and msg.get("isError"):
        return f"{msg.get('toolName') or 'tool'} failed:\n" + decisive_lines(message_text(msg))
    if role == "bashExecution":
        code = msg.get("exitCode")
        if msg.get("cancelled") or (isinstance(code, int) and code != 0):
            head = f"`!{str(msg.get('command', '')).strip()[:200]}` exited with {code}:\n"
            return head + decisive_lines(str(msg.get("output") or ""))
    if role == "assistant" and msg.get("stopReason") == "error":
        return "model error: " + decisive_lines(str(msg.get("errorMessage") or ""))
    if role == "user":
        pasted = pasted_of(message_text(msg))
        if _FAILURE.search(pasted):
            return "error the user pasted:\n" + decisive_lines(pasted)
    return ""


def _user_requests(messages: Sequence[JsonDict]) -> list[str]:
    texts = [message_text(m).strip() for m in messages if m.get("role") == "user"]
    return [t for t in texts if t]


def file_facts(messages: Sequence[JsonDict]) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The files ``messages`` read, modified and modified through bash alone: :class:`Facts`' three lists,
    without the text scans the other facts need."""
    files = _Files()
    for msg in messages:
        if not isinstance(msg, dict):
            continue
        for name, args in _calls(msg):
            files.call(name, args)
        if msg.get("role") == "bashExecution" and isinstance(msg.get("command"), str):
            files.bash(msg["command"])
    return files.freeze()


def extract_facts(messages: Sequence[JsonDict]) -> Facts:
    """The hard facts of ``messages`` (see the module invariants)."""
    read, modified, by_bash = file_facts(messages)
    last_error = ""
    for msg in messages:
        if isinstance(msg, dict):
            last_error = _error_of(msg) or last_error
    users = _user_requests(messages)
    return Facts(
        read_files=read,
        modified_files=modified,
        bash_modified=by_bash,
        constraints=tuple(bounded(revised_within([s for text in users for s in constraint_sentences(text)]))),
        last_request=latest_request(users),
        last_error=last_error,
        identifiers=tuple(_identifiers(messages, users)),
        decisions=tuple(decisions_in(message_text(m) for m in messages
                                     if isinstance(m, dict) and m.get("role") == "assistant")[-DECISIONS_KEPT:]),
        todos=tuple(open_todos(messages)),
    )


def latest_request(user_texts: Sequence[str]) -> str:
    """The newest user message that says something (its prose, verbatim, at most ``REQUEST_CHARS``)."""
    for text in reversed(user_texts):
        prose = prose_of(text).strip()
        if len(prose.split()) >= 2 or (prose and not prose.isascii()):
            return prose if len(prose) <= REQUEST_CHARS else prose[:REQUEST_CHARS].rstrip() + " […]"
    return ""


def identifiers_in(text: str) -> Iterator[str]:
    """Backticked spans, URLs, paths, tags, versions, ``name()`` symbols, upper-case constants, dotted keys,
    snake-case names with a digit and commit hashes in ``text``, in order."""
    for match in _IDENTIFIER.finditer(text):
        found = next(g for g in match.groups() if g)
        yield found.rstrip(".,;:")


def _identifiers(messages: Sequence[JsonDict], users: Sequence[str]) -> list[str]:
    """The user's identifiers first (all of them), then the assistant's newest, up to the cap."""
    mine = dedupe(i for text in users for i in identifiers_in(text))
    theirs: list[str] = []
    for msg in reversed(messages):
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            theirs.extend(i for i in identifiers_in(message_text(msg)) if "`" not in i)
    room = max(0, IDENTIFIERS_KEPT - len(mine))
    return dedupe([*mine, *dedupe(theirs)[:room]])


def bounded(items: Sequence[str], limit: int = CONSTRAINT_CHARS) -> list[str]:
    """``items`` within ``limit`` characters, in order; what does not fit is counted in a last item.

    Dropped first: items marked superseded, then those without a cue
    (:func:`~.cues.cue_strength`), then weakly cued ones — oldest first
    within each; an earlier count (a ``LEFT_OUT`` item) is added to the new one.
    """
    earlier = sum(int(m.group(1)) for i in items if (m := re.match(re.escape(LEFT_OUT) + r"(\d+)", i)))
    fresh = [i for i in items if not i.startswith(LEFT_OUT)]
    size = sum(len(i) for i in fresh)
    gone: set[int] = set()
    if size > limit:
        ranks = [_rank(i) for i in fresh]
        for n in sorted(range(len(fresh)), key=lambda n: ((3, 0, 1, 2).index(ranks[n]), n)):
            if size <= limit:
                break
            gone.add(n)
            size -= len(fresh[n])
    kept = [item for n, item in enumerate(fresh) if n not in gone]
    left_out = earlier + len(gone)
    return [*kept, f"{LEFT_OUT}{left_out}"] if left_out else kept


def _rank(item: str) -> int:
    return 3 if item.endswith(SUPERSEDED) else cue_strength(item)


def dedupe(items: Iterable[str]) -> list[str]:
    """``items`` once each (case and whitespace aside), first seen kept, order kept."""
    seen: dict[str, str] = {}
    for item in items:
        key = " ".join(item.lower().split())
        if key and key not in seen:
            seen[key] = item
    return list(seen.values())

"""The assistant's next steps still open at the cut.

``open_todos(messages)`` reads the assistant's text (oldest first) for the
steps it said were still to do: a ``TODO:`` / ``Next:`` / ``Then:`` item (a
few languages), the list under such a heading or label (``**Next steps:**``),
an unticked checkbox ``- [ ]``, a sentence saying something still needs
doing or announcing the next step ("Next, I'll …", "After that, …"),
and the steps of its newest numbered plan (two or more numbered
lines). It returns them verbatim, oldest
first, without those already done.

Invariants:

* A step is done when it is ticked (``[x]``, ``✅``, ``✓``, ``~~struck~~``,
  ``(done)``), when a later assistant sentence with a completion word
  restates it (3/5 of its significant words), or when it names a file that
  a later ``edit``/``write``/``bash`` call changed (the same path, or the
  same base name when the step gives no directory).
* A todo-list tool call (``todo_write``, ``TodoWrite``, a ``tasklist`` …):
  the items of the newest one not marked completed, done or cancelled.
* The list under a short label or heading that says it is open
  (``Still open:``, ``## Pending``, ``Offen:``, ``残り：``) counts like a
  ``Next steps:`` list.
* At most ``TODOS_KEPT`` (the newest), each at most ``TODO_CHARS``.
* Pure and deterministic; shares nothing with the summary format.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from pi_protocol.base import JsonDict
from pi_sessiond.summarizers.bashfiles import changed_paths

TODOS_KEPT = 16
TODO_CHARS = 300
_CUE_WORDS = (
    r"TODO|FIXME|Next(?: steps?)?|Then|Remaining(?: work| steps)?|Still to do|Left to do|Open (?:TODOs|items)|"
    r"To ?do|Follow-ups?|Als Nächstes|Nächste(?:r)? Schritte?|Offen|Siguiente(?: paso)?|Siguientes pasos|"
    r"Pendiente|Prochaine étape|Prochaines étapes|À faire|Ensuite|Prossimo passo|Prossimi passi|Da fare|"
    r"次に|次は|残り|TODO\(\w+\)"
)
_CUE = re.compile(
    rf"^\s*(?:[-*•+]\s+)?(?:\*\*)?(?:{_CUE_WORDS})(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*(\S.*)$", re.I | re.M
)
# A heading or label of its own ("**Next steps:**", "## TODO") whose list items are the steps.
_CUE_HEAD = re.compile(rf"^\s*(?:#+\s*)?(?:\*\*)?(?:{_CUE_WORDS})(?:\*\*)?\s*[:：]?\s*(?:\*\*)?\s*$", re.I)
# A short label or heading that says what follows is still open ("Still open:", "## Pending", "Offen:").
_OPEN_WORDS = re.compile(
    r"(?<!\w)(?:open|pending|remaining|left|outstanding|not (?:yet )?done|unresolved|unfinished|to ?do|todo|next|"
    r"follow[- ]?ups?|offen|ausstehend|noch zu tun|pendientes?|por hacer|quedan?|restant(?:e|es|s)?|en attente|"
    r"reste à faire|à faire|in sospeso|da fare|mancano|未完了|未対応|残り|今後|次)(?!\w)",
    re.I,
)
_LABEL = re.compile(r"^\s*(?:#+\s*)?(?:\*\*)?([^:：\n*]{1,60}?)(?:\*\*)?\s*(?:[:：]\s*(?:\*\*)?\s*)?$")
_LIST_ITEM = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+(?!\[[ xX]\])(.+)$")
# A sentence that says something is still to be done.
_STILL = re.compile(
    r"\b(?:I (?:still )?need to|still needs? to|still has to|remains? to be|is still (?:missing|open|pending)|"
    r"not (?:done|implemented) yet|il reste à|fehlt noch|muss noch|falta|queda pendiente)\b",
    re.I,
)
# A sentence that announces the next step ("Next, I'll …", "After that, …", "Once this is merged I'll …").
_PROSE_NEXT = re.compile(
    r"^(?:next,? (?:I'll|I will|we'll|we will|I need to|we need to)|after that,|afterwards,|"
    r"then I (?:still )?(?:have|need) to|once (?:this|that|it) (?:is|has been) \w+,? (?:I'll|we'll|I will|we will))\b",
    re.I,
)
_BOX = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+)$", re.M)
_NUMBERED = re.compile(r"^\s*\d+[.)]\s+(.+)$", re.M)
_TICKED = re.compile(r"^\s*(?:\[[xX]\]|✅|✓|✔|~~)|\((?:done|fixed|erledigt|hecho|fait)\)|~~\s*$|[✅✓✔]\s*$", re.I)
_COMPLETED = re.compile(
    r"\b(?:done|finished|completed|fixed|implemented|added|resolved|erledigt|fertig|hecho|terminé|fatto)\b|完了|済み",
    re.I,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_PATHISH = re.compile(r"[\w@~.-]*[\w@~-](?:/[\w@.-]+)*(?:\.\w+)?")
_TODO_TOOL = re.compile(r"todo|task_?list|checklist|plan", re.I)
_ITEM_TEXT = ("content", "text", "title", "task", "description", "step")
_FINISHED = frozenset({"completed", "complete", "done", "cancelled", "canceled", "skipped"})
_STOP = frozenset({"the", "and", "for", "with", "that", "this", "then", "from", "into", "next", "todo"})


def is_ticked(step: str) -> bool:
    """Whether ``step`` is marked done in its own text."""
    return _TICKED.search(step) is not None


def names_changed_file(step: str, paths: Sequence[str]) -> bool:
    """Whether ``step`` names one of ``paths``: whole, as a path one of them ends with (or that ends with
    it), or by a bare base name with an extension."""
    named = [t.rstrip(".,;:") for t in _PATHISH.findall(step)]
    for path in paths:
        base = path.rsplit("/", 1)[-1]
        for token in named:
            if token == path or ("." in base and token == base):
                return True
            if "/" in token and (_ends_with(path, token) or _ends_with(token, path)):
                return True
    return False


def _ends_with(longer: str, shorter: str) -> bool:
    return longer == shorter or longer.endswith("/" + shorter.lstrip("./"))


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"\w{3,}", text.lower()) if w not in _STOP}


def _text(msg: JsonDict) -> str:
    content = msg.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str))


def _changed(msg: JsonDict) -> Iterator[str]:
    for block in msg.get("content") or ():
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        args = block.get("arguments")
        if not isinstance(args, dict):
            continue
        if block.get("name") in ("edit", "write") and isinstance(args.get("path"), str):
            yield args["path"]
        elif block.get("name") == "bash" and isinstance(args.get("command"), str):
            yield from changed_paths(args["command"])


def steps_in(text: str) -> list[tuple[str, bool, bool]]:
    """``(step, ticked, numbered)`` of one assistant text: cue items, checkboxes, a numbered plan's steps."""
    found = [(m.group(1).strip(), False, False) for m in _CUE.finditer(text)]
    listed = _listed_under_cue(text)
    found += [(item, is_ticked(item), False) for item in listed]
    found += [(m.group(2).strip(), m.group(1) != " ", False) for m in _BOX.finditer(text)]
    numbered = [s.strip() for s in _NUMBERED.findall(text) if s.strip() not in listed]
    if len(numbered) >= 2:
        found += [(s, is_ticked(s), True) for s in numbered]
    found += [(s.strip(), False, False) for s in _SENTENCE.split(text)
              if (_STILL.search(s) or _PROSE_NEXT.match(s.strip())) and not _CUE.match(s)]
    return found


def _open_label(line: str) -> bool:
    """A heading, or a short line ending in a colon, whose words say the list after it is still open."""
    label = _LABEL.match(line)
    if not label or not (line.rstrip().endswith((":", "：", ":**")) or line.lstrip().startswith("#")):
        return False
    return len(label.group(1).split()) <= 6 and _OPEN_WORDS.search(label.group(1)) is not None


def _listed_under_cue(text: str) -> list[str]:
    """The list items right under a cue heading (until the first line that is not an item)."""
    items: list[str] = []
    under = False
    for line in text.splitlines():
        if _CUE_HEAD.match(line) or _open_label(line):
            under = True
            continue
        item = _LIST_ITEM.match(line)
        if under and item:
            items.append(item.group(1).strip())
        elif line.strip():
            under = False
    return items


def open_todos(messages: Sequence[JsonDict]) -> list[str]:
    """The still-open next steps of the assistant in ``messages`` (module invariants)."""
    stated: dict[str, tuple[int, str, str, bool]] = {}
    done: list[tuple[int, str]] = []
    changed: list[tuple[int, str]] = []
    newest = {"plan": -1, "tool": -1}
    for index, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") != "assistant":
            continue
        text = _text(msg)
        found = [(step, ticked, "plan" if numbered else "text") for step, ticked, numbered in steps_in(text)]
        found += [(step, ticked, "tool") for step, ticked in tool_steps(msg)]
        for step, ticked, kind in found:
            if kind in newest:  # a plan or a todo list replaces the one before it
                newest[kind] = index
            key = " ".join(re.sub(r"^\s*(?:\[[ xX]\]|✅|✓)\s*", "", step).lower().split())
            if ticked:
                done.append((index, step))
            stated.pop(key, None)
            stated[key] = (index, step, kind, ticked)
        done += [(index, s) for s in _SENTENCE.split(text) if _COMPLETED.search(s) and not _CUE.match(s)]
        changed += [(index, p) for p in _changed(msg)]
    open_steps = [
        step if len(step) <= TODO_CHARS else step[:TODO_CHARS].rstrip() + "…"
        for index, step, kind, ticked in stated.values()
        if not (ticked or index != newest.get(kind, index) or _done_later(step, index, done, changed))
    ]
    return open_steps[-TODOS_KEPT:]


def tool_steps(msg: JsonDict) -> list[tuple[str, bool]]:
    """``(step, done)`` of the items a todo-list tool call sets (``todo_write``, ``TodoWrite``, …)."""
    out: list[tuple[str, bool]] = []
    for block in msg.get("content") or ():
        if not isinstance(block, dict) or block.get("type") != "toolCall":
            continue
        args = block.get("arguments")
        if not _TODO_TOOL.search(str(block.get("name") or "")) or not isinstance(args, dict):
            continue
        for items in (v for v in args.values() if isinstance(v, list)):
            out += [step for item in items if (step := _tool_item(item))]
    return out


def _tool_item(item: object) -> tuple[str, bool] | None:
    if isinstance(item, str):
        return (item.strip(), False) if item.strip() else None
    if not isinstance(item, dict):
        return None
    text = next((v for k in _ITEM_TEXT if isinstance(v := item.get(k), str) and v.strip()), None)
    if text is None:
        return None
    status = str(item.get("status") or item.get("state") or "").lower()
    finished = status in _FINISHED or any(item.get(k) is True for k in ("done", "completed", "checked"))
    return text.strip(), finished


def _done_later(step: str, index: int, done: list[tuple[int, str]], changed: list[tuple[int, str]]) -> bool:
    """A later completion sentence restates ``step``, or a later call changed a file it names."""
    words = _words(step)
    for at, sentence in done:
        overlap = words & _words(sentence)
        if at > index and words and len(overlap) >= max(2, 0.6 * len(words)):
            return True
    return names_changed_file(step, [p for at, p in changed if at > index])

"""What a person wrote, cut into the units a summary carries: prose lines, list items, sentences.

Invariants:

* ``prose_of(text)`` drops fenced code, pasted log and code lines and deep
  ``>`` quotes (pytest's failing line); a ``> `` quoted line of prose is kept
  without its marker. List items and ordinary lines are kept as written.
* ``units(prose)`` yields ``(unit, is_list_item)``: every list item whole,
  every other line cut into sentences. A cut is made after ``.``, ``!`` or
  ``?`` followed by white space and a sentence start (not a lower-case
  letter, not after an abbreviation such as ``e.g.``, ``z.B.`` or ``p. ej.``
  nor after a short word when a number follows), and right
  after ``。！？`` — never inside a quotation, brackets or a code span, and
  never at ``;`` (the halves of a rule stay together). Joining the units of
  a line with single spaces gives the line back (white space aside).
* Pure and deterministic; no language is required for any of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

LIST_ITEM = re.compile(r"^\s*(?:(?:[-*•+]|\d+[.)、]|[a-z][.)]|[（(]\d+[)）])\s+|・\s*)(.+)$")
_FENCE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)", re.S)
_LOG_LINE = re.compile(
    r"^(?:\w*(?:Error|Exception)|ERR!?|FATAL|WARN(?:ING)?|panic):\s|^\d{4}-\d\d-\d\d[T ]\d\d:|^\[\d|^\[\s*\w+\s*\]\s*\d"
    r"|^[\w./\\-]+:\d+(?::\d+)?:\s|^[\w./\\-]+\(\d+,\d+\):\s"
)
_CODE_START = ("$ ", ">>> ", 'File "', "Traceback", "    ", "\t", "➜ ", "❯ ", "% ")
# JSON fragments, object-literal fields (`code: 'ENOENT',`) and lone tokens such as `node:fs:443`.
_DATAISH = re.compile(
    r"\"\s*:\s*[\"{\[\d]|[{\[]\s*\"|\"\s*[}\]]"
    r"|^[\w$-]+:\s*(?:'[^']*'|\"[^\"]*\"|-?\d[\d.]*)\s*,?$"
    r"|^PS [A-Z]:\\"
)
# A lone token such as `node:fs:443` (in a script written with spaces: a sentence without them is not one).
_LONE_TOKEN = re.compile(r"^[^\s:/=@]*[:/=@](?=\S)\S*$")
_FRAME = re.compile(r"^\s*at \S+ \(|^\s*at \S+:\d+")
_TAG = re.compile(r"^</?[A-Za-z][\w-]*[\s>/]")
_SHALLOW_QUOTE = re.compile(r"^\s*>\s?(?=\S)(?!>)")
# Spans no cut falls into: code, quotations, brackets.
_SPANS = re.compile(
    r"`[^`\n]*`|\"[^\"\n]*\"|“[^”\n]*”|„[^“”\n]*[“”]|«[^»\n]*»|「[^」\n]*」|『[^』\n]*』|\([^()\n]*\)|（[^）\n]*）"
)
_CUT = re.compile(r"[.!?]+[\"”»」』)）’]*(?=\s+\S)|[。！？]+[」』）)\"”]*")
_ABBREVIATION = re.compile(
    r"(?:^|[\s(])(?:\w\.){1,3}\w?\.?$|(?:^|[\s(])(?:\w\.\s){1,2}\w{1,3}\.$"
    r"|(?:^|[\s(])(?:etc|vs|cf|ca|approx|bzw|usw|ggf|evtl|inkl|zzgl|Nr|No|Dr|Mr|Mrs|Ms|St|núm|pág|env)\.$",
    re.I,
)
_SHORT_WORD = re.compile(r"(?:^|[\s(])[^\W\d_]{1,3}\.$")


def prose_of(text: str) -> str:
    """``text`` without fenced code, pasted log/code lines and deep ``>`` quotes (module invariants)."""
    out = []
    for line in _FENCE.sub("\n", text).splitlines():
        if _SHALLOW_QUOTE.match(line) and not line.lstrip().startswith(">  "):
            line = _SHALLOW_QUOTE.sub("", line, count=1)
        if not codeish(line):
            out.append(line)
    return "\n".join(out).strip()


def pasted_of(text: str) -> str:
    """The pasted part of ``text``: its fenced blocks and code or log lines, in order."""
    parts = [block.strip("`~\n") for block in _FENCE.findall(text)]
    parts += [line for line in _FENCE.sub("\n", text).splitlines() if codeish(line)]
    return "\n".join(parts)


def codeish(line: str) -> bool:
    """Whether ``line`` looks like pasted code or log output rather than prose."""
    stripped = line.strip()
    if not stripped:
        return False
    if line.startswith(_CODE_START) or _FRAME.match(line) or stripped.startswith((">", "{", "|", "#!", "//")):
        return True
    if _LOG_LINE.match(stripped) or _TAG.match(stripped) or _DATAISH.search(stripped):
        return True
    if stripped.isascii() and _LONE_TOKEN.match(stripped):
        return True
    if stripped.startswith(("[{", '["', "[[")):
        return True
    if LIST_ITEM.match(line):
        return False
    if stripped.endswith((";", "{", "}", ")")) and ("(" in stripped or line[:1].isspace()) and stripped.count(" ") < 4:
        return True
    plain = sum(c.isalnum() or c.isspace() or c in ",.!?'\"-:()`*/_=<>%" for c in stripped)
    return plain < 0.7 * len(stripped)


def units(prose: str) -> Iterator[tuple[str, bool]]:
    """``(unit, is_list_item)`` of ``prose``, in order (module invariants)."""
    for line in prose.splitlines():
        item = LIST_ITEM.match(line)
        if item:
            yield item.group(1).strip(), True
            continue
        for part in sentences(line):
            yield part, False


def sentences(line: str) -> list[str]:
    """The sentences of one line of prose (module invariants)."""
    protected = [(m.start(), m.end()) for m in _SPANS.finditer(line)]
    out: list[str] = []
    start = 0
    for cut in _CUT.finditer(line):
        end = cut.end()
        if any(a < end < b for a, b in protected) or not _starts_sentence(line, cut.group(), end):
            continue
        if cut.group()[0] == "." and _abbreviated(line[start : cut.start() + 1], line[end:].lstrip()):
            continue
        out.append(line[start:end])
        start = end
    out.append(line[start:])
    return [part.strip() for part in out if part.strip()]


def _abbreviated(before: str, after: str) -> bool:
    """Whether the period ending ``before`` closes an abbreviation (``e.g.``, ``z.B.``, ``p. ej. 2``)."""
    if _ABBREVIATION.search(before):
        return True
    return bool(after[:1].isdigit() and _SHORT_WORD.search(before))


def _starts_sentence(line: str, mark: str, end: int) -> bool:
    rest = line[end:]
    if mark[0] in "。！？":
        return mark[-1] in "。！？" or not rest or rest[0].isspace()
    rest = rest.lstrip()
    return bool(rest) and not rest[0].islower()


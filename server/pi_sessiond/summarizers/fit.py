"""Fitting a finished summary into a size bound, whoever wrote it.

``fit_text(text, max_tokens)`` returns ``text`` when it is within
``max_tokens`` (Pi's estimate: ``ceil(chars / 4)``), else the text with
items removed until it fits.

Invariants:

* Headings always stay. An item is a list entry with its indented
  continuation lines (or one plain line). The longest section loses its
  oldest item first; items the fidelity gate added (``[gate]``) go only when
  nothing else is left; one last line counts what was left out.
* If headings and the count alone exceed the bound, the text is cut to it.
* Pure and deterministic; the result never exceeds ``max_tokens``.
"""

from __future__ import annotations

import math
import re

from pi_sessiond.summarizers.gate import MARK

_ITEM_START = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|>\s?|\S)")
CHARS_PER_TOKEN = 4


def tokens(text: str) -> int:
    """Pi's estimate of ``text``: ``ceil(chars / 4)``."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def _sections(text: str) -> list[tuple[str, list[str]]]:
    """``(heading line or "", items)`` in order; an item keeps its continuation lines."""
    sections: list[tuple[str, list[str]]] = [("", [])]
    for line in text.split("\n"):
        if line.startswith("#"):
            sections.append((line, []))
        elif line.strip() and (not line.startswith(" ") or not sections[-1][1]) and _ITEM_START.match(line):
            sections[-1][1].append(line)
        elif sections[-1][1]:
            sections[-1][1][-1] += "\n" + line
        elif line.strip():
            sections[-1][1].append(line)
    return sections


def _render(sections: list[tuple[str, list[str]]], left_out: int) -> str:
    parts = []
    for heading, items in sections:
        body = "\n".join(item.rstrip("\n") for item in items)
        parts.append("\n".join(p for p in (heading, body) if p))
    text = "\n\n".join(p for p in parts if p)
    return text + (f"\n\n[… {left_out} items left out to fit the size bound]" if left_out else "")


def fit_text(text: str, max_tokens: int) -> str:
    """``text`` within ``max_tokens`` (module invariants)."""
    limit = max_tokens * CHARS_PER_TOKEN
    if len(text) <= limit:
        return text
    sections = _sections(text)
    left_out = 0
    for keep_gate in (True, False):
        while len(_render(sections, left_out)) > limit:
            candidates = [s for s in sections if any(not (keep_gate and MARK in i) for i in s[1])]
            if not candidates:
                break
            _, items = max(candidates, key=lambda s: sum(len(i) for i in s[1]))
            index = next(n for n, item in enumerate(items) if not (keep_gate and MARK in item))
            del items[index]
            left_out += 1
    fitted = _render(sections, left_out)
    return fitted if len(fitted) <= limit else fitted[: max(0, limit - 1)] + "…"

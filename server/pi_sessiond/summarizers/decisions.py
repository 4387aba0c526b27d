"""Decisions the assistant stated, with their reason.

``decisions_in(texts)`` reads assistant texts (oldest first) and returns each
sentence that states a choice — "I'll …", "we'll use …", "decided",
"chose", "opted", "settled on", "going with", "instead of", "rather than",
"the fix is" — as ``**the choice**: the reason`` when a reason follows
(``because``, ``since``, ``as``, ``so that``, ``to avoid``), else
``**the sentence**``.

Invariants:

* Not a decision: a sentence of fewer than six words, a routine step ("I'll
  check / read / run …") or an announced next step ("Next, I'll …", "After
  that, …", "Once this is merged I'll …": those are open steps, :mod:`.todos`).
* Verbatim but for white space, at most ``DECISION_CHARS`` characters,
  each once (case and white space aside), oldest first.
* Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DECISION_CHARS = 300
_DECISION = re.compile(
    r"\b(?:I'll|I will|let's|we'll|we will|instead|decided|decide to|switch(?:ed|ing)? to|going with|"
    r"go with|went with|the fix is|the approach|better to|rather than|we can have|we should|use `|"
    r"chose|chosen|opted|settled on|picked|pinned|stays? at|kept at)",
    re.I,
)
_ROUTINE = re.compile(
    r"\b(?:I'll|I will|let's) (?:now |first |also )?"
    r"(?:check|look|read|run|verify|see|test|try|start|implement|commit)\b",
    re.I,
)
_NEXT = re.compile(
    r"^(?:now |then )?(?:next\b|after that\b|afterwards\b|once (?:this|that|it)\b|then I (?:still )?(?:have|need) to"
    r"|I (?:still )?need to|still need to|remaining:)",
    re.I,
)
_RATIONALE = re.compile(r"[\s,]+(?:because|since|as|so that|to avoid)\s", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def decisions_in(texts: Iterable[str]) -> list[str]:
    """The decisions stated in ``texts`` (module invariants)."""
    found: dict[str, str] = {}
    for text in texts:
        for raw in _SENTENCE.split(text):
            sentence = " ".join(raw.split())
            if len(sentence.split()) < 6 or not _DECISION.search(sentence) or _ROUTINE.search(sentence):
                continue
            if _NEXT.match(sentence):
                continue
            if len(sentence) > DECISION_CHARS:
                sentence = sentence[:DECISION_CHARS].rstrip() + "…"
            parts = _RATIONALE.split(sentence, maxsplit=1)
            item = f"**{parts[0].rstrip(' :.,;')}**" + (f": {parts[1]}" if len(parts) > 1 else "")
            found.setdefault(" ".join(item.lower().split()), item)
    return list(found.values())

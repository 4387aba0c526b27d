"""Text helpers of the offline summarizer: condensing, requests, sentences, command labels.

Pure and deterministic; no model, no I/O.
"""

from __future__ import annotations

import re

from pi_sessiond.summarizers.cues import cue_strength
from pi_sessiond.summarizers.segment import prose_of, units

_INSPECT = re.compile(
    r"(?:ls|cat|grep|rg|find|head|tail|wc|echo|pwd|which|tree|file|stat|sed -n|git (?:status|diff|log|show))\b"
)
_CD_PREFIX = re.compile(r"^\s*cd\s+\S+\s*(?:&&|;|\n)\s*")
_OUTPUT_FILTER = re.compile(r"\s+2>&1|\s*\|\s*(?:head|tail|grep)\b.*$")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_ERROR_LINE = re.compile(r"^\s*(?:\w*(?:Error|Exception)\b|Traceback|panic:|error\b|ERR!)", re.M)
_ACTION = re.compile(
    r"\b(?:add|fix|move|remove|remoev|delete|rename|refactor|implement|read|tackle|make|create|update|write|"
    r"split|change|build|run|test|check|investigate|commit|explain|suggest|use|continue|clean|improve|"
    r"please|let's|need|want|should|must|can we|can you|could you|try|tell|show|plan)\b",
    re.I,
)


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


TASK_CHARS = 300


def task_of(text: str) -> str:
    """What a request asks, in a sentence or two: its first prose sentence, and the next one when the first
    is short (under 60 characters) and the next one no rule of its own (no cue), at most ``TASK_CHARS``."""
    said = [unit for unit, _ in units(prose_of(text))]
    if not said:
        return condense(text, TASK_CHARS)
    second = len(said[0]) < 60 and len(said) > 1 and cue_strength(said[1]) == 0
    task = f"{said[0]} {said[1]}" if second else said[0]
    return condense(task, TASK_CHARS)

"""Carry-forward by identity: the same item is one item, and only a real revision marks an earlier one.

``merge_items(old, new)`` joins the items an earlier summary carried (``old``)
with those of the range just summarized (``new``), oldest first.

Invariants:

* Identity, not position: two items are the same when their text is (case,
  white space, backticks, emphasis, the gate's ``[gate]`` mark, a turn
  label such as ``Constraint:`` and the superseded mark aside). The same item
  said again is kept once, where it was first, unmarked.
* An old item already marked superseded was revised by an earlier range: it
  is dropped (the mark is kept only while its revision is in range).
* A new item revises an older one (:func:`revises`) when it says so — a
  revision cue ("actually", "from now on", "change of plan", "no longer", in
  several languages; "instead" or "rather" only state a preference) and at least two significant words (four letters or
  more, or with a digit) of the older one and a third of them — or when both
  say the same but for one number. The
  older one is then marked :data:`SUPERSEDED`. Two similar rules
  without a cue ("never touch a/", "never touch b/") are both kept.
* Pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

SUPERSEDED = " (superseded by a later item)"
_MARK = "[gate]"
_LABEL = re.compile(r"^(?:Constraint|Decision|Next|Goal):\s+")
_STOP = frozenset(
    {"about", "after", "also", "and", "are", "but", "for", "from", "have", "into", "more", "only", "that", "the"}
    | {"then", "this", "what", "when", "with", "use", "all", "any", "not", "now", "actually", "instead", "rather"}
    | {"plan", "change", "der", "die", "das", "und", "los", "las", "del", "que", "les", "des", "une", "pas"}
)
_CUE = re.compile(
    r"(?<!\w)(?:actually|on second thought|changed? my mind|change of plan|scratch that|"
    r"forget (?:that|what i said|the earlier)|ignore (?:my|the) (?:earlier|previous)|no longer|not any ?more|"
    r"from now on|after all|going forward|correction|let'?s go with|revert(?:ed)? to|"
    r"doch|eigentlich|vergiss|nicht mehr|ab jetzt|ab sofort|korrektur|"
    r"en realidad|olvida|ya no|a partir de ahora|cambi[eé] de opini[oó]n|"
    r"en fait|finalement|oublie|désormais|à partir de maintenant|j'ai changé d'avis|"
    r"anzi|in realtà|non più|d'ora in poi|na verdade|a partir de agora)(?!\w)"
    r"|やっぱり|やはり|訂正|これからは|今後は|やめます|改为|还是|不再",
    re.I,
)
_WORD = re.compile(r"[^\W\d_]{4,}|\w*\d\w*|[^\W\d_a-zA-Z\u00c0-\u024f]{2,}")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)?")


CACHED_ITEMS = 4096
"""How many items' identities and words are kept: a merge compares every item with every later one,
and long items would be read again each time."""


@lru_cache(maxsize=CACHED_ITEMS)
def key(item: str) -> str:
    """The identity of an item: lower case, marks, labels, backticks, emphasis and white space aside."""
    text = _LABEL.sub("", item.replace(_MARK, " ").strip()).removesuffix(SUPERSEDED.strip())
    text = text.strip().removesuffix(SUPERSEDED.strip())
    return " ".join(re.sub(r"[`*_]", "", text.lower()).split()).rstrip(" .;")


_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+")
_HIRAGANA = re.compile(r"^[\u3040-\u309f]+$")


@lru_cache(maxsize=CACHED_ITEMS)
def _words(item: str) -> frozenset[str]:
    """Significant words; in a script written without spaces, its character pairs (not kana-only ones)."""
    text = key(item)
    words = {w for w in _WORD.findall(_CJK.sub(" ", text)) if w not in _STOP and not w.isdigit()}
    pairs = {run[n : n + 2] for run in _CJK.findall(text) for n in range(len(run) - 1)}
    return frozenset(words | {p for p in pairs if not _HIRAGANA.match(p)})


@lru_cache(maxsize=CACHED_ITEMS)
def _cued(item: str) -> bool:
    return _CUE.search(item) is not None


@lru_cache(maxsize=CACHED_ITEMS)
def _tokens(item: str) -> tuple[str, ...]:
    return tuple(key(item).split())


def revises(new: str, old: str) -> bool:
    """Whether ``new`` revises ``old`` (module invariants)."""
    if key(new) == key(old):
        return False
    if _cued(new):
        old_words = _words(old)
        shared = len(old_words & _words(new))
        if shared >= 2 and shared >= 0.34 * len(old_words):
            return True
    old_tokens, new_tokens = _tokens(old), _tokens(new)
    if len(old_tokens) != len(new_tokens) or len(old_tokens) < 4:
        return False
    changed = [n for n, (a, b) in enumerate(zip(old_tokens, new_tokens, strict=True)) if a != b]
    return (len(changed) == 1
            and bool(_NUMBER.search(old_tokens[changed[0]])) and bool(_NUMBER.search(new_tokens[changed[0]])))


def dedupe_items(items: Iterable[str]) -> list[str]:
    """``items`` once each by identity, first seen kept (a marked copy gives way to an unmarked one)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for item in items:
        k = key(item)
        if not k:
            continue
        if k in seen:
            if out[seen[k]].endswith(SUPERSEDED) and not item.endswith(SUPERSEDED):
                out[seen[k]] = item
            continue
        seen[k] = len(out)
        out.append(item)
    return out


def merge_items(old: Sequence[str], new: Sequence[str], *, keep_marked: bool = False) -> list[str]:
    """``old`` (stale marks dropped unless ``keep_marked``, revised ones marked) then ``new``, each item once
    (module invariants)."""
    kept = [item for item in old if keep_marked or not item.rstrip().endswith(SUPERSEDED.strip())]
    known = {key(item) for item in kept}
    fresh = dedupe_items(item for item in new if key(item) not in known)
    out = [_marked(item, fresh) for item in dedupe_items(kept)]
    return out + [_marked(item, fresh[n + 1 :]) for n, item in enumerate(fresh)]


def revised_within(items: Sequence[str]) -> list[str]:
    """``items`` (one range, oldest first) with those a later one revises marked."""
    items = dedupe_items(items)
    return [_marked(item, items[n + 1 :]) for n, item in enumerate(items)]


def _marked(item: str, later: Sequence[str]) -> str:
    if item.endswith(SUPERSEDED) or not any(revises(other, item) for other in later):
        return item
    return item + SUPERSEDED

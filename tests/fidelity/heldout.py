"""The held-out list (``data/heldout.toml``) as frozen records.

Contract: every ``match`` string occurs (after :func:`tests.fidelity.score.normalize`)
in its item's ``text``; :func:`load` checks it, so a typo in the list fails loudly.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

DATA = Path(__file__).with_name("data") / "heldout.toml"
LANGS = ("en", "de", "es", "ja", "fr")


@dataclass(frozen=True)
class Constraint:
    """A constraint or preference phrasing; ``earlier`` is what an override replaces."""

    id: str
    lang: str
    kind: str
    text: str
    match: str
    earlier: str | None = None


@dataclass(frozen=True)
class Request:
    """A last-request shape."""

    id: str
    lang: str
    text: str
    match: str


@dataclass(frozen=True)
class ErrorShape:
    """A long tool output whose decisive lines (``tail``) come at the end."""

    id: str
    shape: str
    command: str
    head: str
    padding: str
    tail: str
    match: tuple[str, ...]


@dataclass(frozen=True)
class HeldOut:
    """The whole list."""

    constraints: tuple[Constraint, ...]
    requests: tuple[Request, ...]
    errors: tuple[ErrorShape, ...]

    def constraints_of(self, lang: str) -> list[Constraint]:
        """The constraints written in ``lang``, in file order."""
        return [c for c in self.constraints if c.lang == lang]

    def requests_of(self, lang: str) -> list[Request]:
        """The requests written in ``lang``, in file order."""
        return [r for r in self.requests if r.lang == lang]


@cache
def load(path: Path = DATA) -> HeldOut:
    """Parse the list; raises ``ValueError`` when a ``match`` is not in its text."""
    from tests.fidelity.score import normalize

    raw = tomllib.loads(path.read_text(encoding="utf-8"))
    cons = tuple(Constraint(id=f"{c['lang']}-c{i}", **c) for i, c in enumerate(raw["constraint"]))
    reqs = tuple(Request(id=f"{r['lang']}-r{i}", **r) for i, r in enumerate(raw["request"]))
    errs = tuple(ErrorShape(id=f"e{i}", **{**e, "match": tuple(e["match"])}) for i, e in enumerate(raw["error"]))
    for item in (*cons, *reqs):
        if normalize(item.match) not in normalize(item.text):
            raise ValueError(f"{item.id}: match {item.match!r} is not in its text")
    for err in errs:
        for needle in err.match:
            if normalize(needle) not in normalize(err.tail):
                raise ValueError(f"{err.id}: match {needle!r} is not in its tail")
    return HeldOut(cons, reqs, errs)

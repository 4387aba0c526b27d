"""The session shapes of the planted-fact suite, at two sizes.

Each :class:`Scenario` is a list of rounds; a round is some turns followed by an
action: ``compact`` (score the compaction), ``branch`` (navigate back to the
round's first user message with a summary, score the branch summary) or ``none``.
The last turn of a compacted round is a long one (``Size.tail_steps`` > the kept
tokens), so the cut splits it and its request lies in the turn prefix — the
"latest request" of the summarized range. Which facts are in range is decided by
the written entry's ``firstKeptEntryId``, never assumed.

Shapes: ``long-<lang>`` (goal and early constraints at the start of a long
session, one user language), ``request-<id>`` (one per held-out request: that
request and a held-out error are the last of the range), ``repeated`` (grow ->
compact, 10 rounds of three turns, the users switching language every two rounds), ``branch``
(work, an abandoned attempt summarized by navigating away, new work, compact).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from random import Random

from tests.fidelity import material as M
from tests.fidelity.heldout import LANGS, Constraint, ErrorShape, HeldOut, Request, load
from tests.fidelity.sessions import Turn


@dataclass(frozen=True)
class Size:
    """``keep``: keepRecentTokens of every compaction; ``steps``/``tail_steps``: filler steps per turn."""

    name: str
    keep: int
    steps: int
    tail_steps: int


SMOKE = Size("smoke", 1500, 1, 5)
FULL = Size("full", 20_000, 10, 40)


@dataclass
class Scenario:
    """A session to write and the action after each round."""

    name: str
    lang: str
    seed: int
    rounds: list[tuple[list[Turn], str]] = field(default_factory=list)


class Files:
    """Hands out files from the pools in turn, so every scenario touches many distinct ones."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.reads = itertools.cycle(rng.sample(M.READ_ONLY, len(M.READ_ONLY)))
        self.mods = itertools.cycle(rng.sample(M.MODIFIED, len(M.MODIFIED)))
        ops: list[tuple[str, ...]] = [("mv", *pair) for pair in M.BASH_MOVES]
        ops += [("sed", f) for f in M.BASH_SED] + [(">", f) for f in M.BASH_REDIRECT]
        ops += [("rm", f) for f in M.BASH_RM]
        self.ops = itertools.cycle(rng.sample(ops, len(ops)))

    def work(self) -> dict[str, list[object]]:
        """Reads, edits, an optional write and one bash file operation for one turn."""
        return {"reads": [next(self.reads) for _ in range(self.rng.randint(1, 2))],
                "edits": [next(self.mods) for _ in range(self.rng.randint(1, 2))],
                "writes": [next(self.mods)] if self.rng.random() < 0.4 else [],
                "bash_ops": [next(self.ops)]}


def _req(r: Request) -> tuple[str, str, str]:
    return r.text, r.match, r.id


def _soft(seed: int) -> Iterator[dict[str, object]]:
    """Per turn: one assistant decision, one identifier in prose, every other turn an open step (in turn)."""
    n = seed
    while True:
        yield {"decisions": [M.DECISIONS[n % len(M.DECISIONS)]], "said_ids": [M.SAID_IDS[n % len(M.SAID_IDS)]],
               "plan": [M.PLANS[n // 2 % len(M.PLANS)]] if n % 2 else []}
        n += 1


def _chunks(items: Sequence[Constraint], n: int) -> list[list[Constraint]]:
    return [list(items[i::n]) for i in range(n)]


def _turn(files: Files, lang: str, req: Request, size: Size, *, tail: bool = False,
          error: ErrorShape | None = None, **extra: object) -> Turn:
    work = files.work()
    return Turn(lang=lang, request=_req(req), error=error, error_first=tail,
                steps=size.tail_steps if tail else size.steps, **work, **extra)  # type: ignore[arg-type]


def long_session(lang: str, size: Size, seed: int, held: HeldOut) -> Scenario:
    """Goal + early constraints first, one turn per held-out request of ``lang``, compact once."""
    rng, files = Random(seed), Files(Random(seed + 1))
    cons, reqs = held.constraints_of(lang), held.requests_of(lang)
    plain = [c for c in cons if c.kind != "override"]
    overs = [c for c in cons if c.kind == "override"]
    middle = _chunks(plain[5:], len(reqs) - 1)
    (early, early_match), (later, later_match) = M.PREFERENCES[lang][0]
    soft = _soft(seed)
    turns = [_turn(files, lang, reqs[0], size, goal=M.GOALS[lang], constraints=plain[:5], earlier=overs,
                   identifiers=M.IDENTIFIERS[:2], prefers=[(early, early_match, "")], **next(soft))]
    for i, req in enumerate(reqs[1:-1], start=1):
        last_middle = i == len(reqs) - 2
        turns.append(_turn(files, lang, req, size, error=rng.choice(held.errors), paste=i == 1,
                           constraints=middle[i - 1] + ((overs + middle[-1]) if last_middle else []),
                           identifiers=[M.IDENTIFIERS[2 + i]], todos=M.TODOS[:2] if last_middle else [],
                           prefers=[(later, later_match, early_match)] if last_middle else [], **next(soft)))
    turns.append(_turn(files, lang, reqs[-1], size, tail=True, error=rng.choice(held.errors)))
    return Scenario(f"long-{lang}", lang, seed, [(turns, "compact")])


def request_sweep(size: Size, seed: int, held: HeldOut) -> Iterator[Scenario]:
    """One small session per held-out request; the errors cycle through every held-out shape."""
    errors = held.errors
    for i, req in enumerate(held.requests):
        files = Files(Random(seed + i))
        first = Turn(lang=req.lang, request=(M.GOALS[req.lang][0], M.GOALS[req.lang][1], "goal"),
                     goal=M.GOALS[req.lang], steps=size.steps, error=errors[(i + 3) % len(errors)],
                     **files.work())  # type: ignore[arg-type]
        last = _turn(files, req.lang, req, size, tail=True, error=errors[i % len(errors)])
        yield Scenario(f"request-{req.id}", req.lang, seed + i, [([first, last], "compact")])


def repeated(size: Size, seed: int, held: HeldOut, rounds: int = 10) -> Scenario:
    """Grow -> compact, ``rounds`` times; two rounds per user language."""
    rng, files = Random(seed), Files(Random(seed + 1))
    out = Scenario("repeated", "mixed", seed)
    soft = _soft(seed)
    for r in range(rounds):
        lang = LANGS[(r // 2) % len(LANGS)]
        cons, reqs = held.constraints_of(lang), held.requests_of(lang)
        plain = _chunks([c for c in cons if c.kind != "override"], 4)
        overs = [c for c in cons if c.kind == "override"]
        k = 2 * (r % 2)
        (early, early_match), (later, later_match) = M.PREFERENCES[lang][0]
        first = _turn(files, lang, reqs[k], size, error=rng.choice(held.errors), constraints=plain[k],
                      earlier=overs if k == 0 else [], goal=M.GOALS["en"] if r == 0 else None,
                      identifiers=[M.IDENTIFIERS[r % len(M.IDENTIFIERS)]], todos=[M.TODOS[r % len(M.TODOS)]],
                      prefers=[(early, early_match, "")] if k == 0 else [], **next(soft))
        ask = M.FOLLOW_UPS[lang].format(n=r + 1)
        middle = Turn(lang=lang, request=(ask, ask.rstrip(".。"), "follow-up"), steps=size.steps,
                      error=rng.choice(held.errors), identifiers=[M.IDENTIFIERS[(r + 5) % len(M.IDENTIFIERS)]],
                      **next(soft), **files.work())  # type: ignore[arg-type]
        last = _turn(files, lang, reqs[k + 1], size, tail=True, error=rng.choice(held.errors),
                     constraints=plain[k + 1] + (overs if k else []),
                     prefers=[(later, later_match, early_match)] if k else [])
        out.rounds.append(([first, middle, last], "compact"))
    return out


def branch(size: Size, seed: int, held: HeldOut, lang: str = "es") -> Scenario:
    """Main work, an abandoned attempt (navigated away from, with a summary), new work, compact."""
    rng, files = Random(seed), Files(Random(seed + 1))
    cons, reqs = held.constraints_of(lang), held.requests_of(lang)
    plain = _chunks([c for c in cons if c.kind != "override"], 4)
    main = [_turn(files, lang, reqs[0], size, goal=M.GOALS[lang], constraints=plain[0])]
    gone = [_turn(files, lang, reqs[1], size, constraints=plain[1], error=rng.choice(held.errors)),
            _turn(files, lang, reqs[2], size, constraints=plain[2], error=rng.choice(held.errors),
                  identifiers=[M.IDENTIFIERS[-1]])]
    new = [_turn(files, lang, reqs[3], size, tail=True, constraints=plain[3], error=rng.choice(held.errors))]
    return Scenario("branch", lang, seed, [(main, "none"), (gone, "branch"), (new, "compact")])


def all_scenarios(size: Size, seed: int = 14) -> list[Scenario]:
    """Every shape at ``size``."""
    held = load()
    out = [long_session(lang, size, seed + n, held) for n, lang in enumerate(LANGS)]
    out += [repeated(size, seed + 100, held), branch(size, seed + 200, held)]
    return out + list(request_sweep(size, seed + 300, held))

"""Every session file from the wild (``../shared/fixtures/wild``) against Pi 1.6.0, one file per test id.

Files Pi wrote for its users (``u*``), files of OpenClaw, which embeds Pi's
SessionManager (``o*``), v1 files of Pi's own repository (``p*``) and other
projects' hand-written fixtures (``f*``: malformed lines, entries without ids,
no version, branches, custom entries). For each file, through the 1.6.0 oracle:

1. load: header, entries, leaf, the flattened tree, labels, session name, the
   number of lines left out (Pi's entries skip them silently; we warn), and the
   file after the open (``test_fix_a_file_is_written_at_our_first_append_not_on_open``);
2. context and projection at every entry (above ``SMALL`` entries: the last
   ``TAIL``, ``SPREAD`` more spread over the file, every branch point, tree leaf
   and compaction);
3. ``projectedTokens`` at the leaf; the preparation at the leaf with the default
   settings and with ``keepRecentTokens`` ``SMALL_KEEP`` (most files have
   something to compact then), and before every compaction; ``collectBranch``
   between every two tree leaves;
4. the session stats (Pi's own ``getSessionStats`` on Node 24).

Values are compared as the JSON text JavaScript prints (``jsontext.dumps``): a
file's ``0.0`` is the number 0 to Pi. A v1 file opens with the same ids on both
sides (the oracle draws Pi's migration ids from a counter, ``%08x`` of the
position, as ours), so every op reads the original file. Where we differ from Pi
on purpose (docs/deviations.md), the comparison applies the difference by name:

* ``IDLESS``: entries without an id in a v2/v3 file. Pi keeps them all in its
  entries and tree; we keep only the last (Pi's leaf), under a local id Pi
  cannot name, and drop the others with a warning (nothing can reach them);
* ``BODILESS``: a message line whose skeleton is well formed but whose body is
  not JSON. Pi skips the line; we keep it as an entry without a message, which
  contributes nothing to a context;
* ``STATS``: Pi's stats throw on an answer without ``usage`` or a ``usage``
  without ``cost``; we count them, adding nothing. Pi counts a repaired copy
  (the same file with zero usage there, and without the ``IDLESS`` lines we drop).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import REPO, require
from tests.parity.oracle import UNDEFINED, OracleError, PiOracle
from tests.parity.test_compaction_parity import Tally, check_branch, check_projected_tokens, run_case
from tests.parity.test_projection_parity import our_context
from tests.parity.test_stats_pi16 import assert_stats_match
from tests.parity.test_store_parity import our_tree

from pi_sessiond.compaction.prepare import prepare_compaction
from pi_sessiond.compaction.tokens import CompactionSettings
from pi_sessiond.jsonio.jsontext import dumps, loads
from pi_sessiond.store.errors import NotASessionError
from pi_sessiond.store.migrate import IDLESS_PREFIX
from pi_sessiond.store.session import Session

pytestmark = pytest.mark.parity
Json = dict[str, Any]

WILD = REPO.parent / "shared" / "fixtures" / "wild"
NAMES = sorted(p.name for p in WILD.glob("*.jsonl")) or ["(no wild files)"]
SMALL = 300  # files up to this many entries get a context at every entry
TAIL = 50  # above it: the last entries, plus every branch point, tree leaf and compaction
SPREAD = 10  # and about this many entries spread over the file
SMALL_KEEP = 1  # keepRecentTokens that leaves most files something to compact
BUDGETS = (0, 2000)  # tokenBudget of the branch preparations
MAX_BRANCH_PAIRS = 12
CONTEXTS_PER_CALL = 10  # Pi's contexts of a big file are large: a few at a time
SKIP_WARNINGS = ("skipped", "ignored")  # our warnings that say a line was left out


def js(value: Any) -> str:
    """The JSON text JavaScript prints for ``value`` (key order kept; ``0.0`` is ``0``)."""
    return dumps(value).decode("utf-8")


def _idless(data: Any) -> bool:
    """Whether an entry has no id Pi or we can name (IDLESS)."""
    return not (isinstance(data, dict) and isinstance(data.get("id"), str) and data["id"])


@dataclass
class Wild:
    """One wild file as both sides read it."""

    path: Path
    pi: Json  # the oracle's ``load``
    ours: Session
    bodiless: frozenset[str]  # BODILESS: our entries whose line Pi skipped
    dropped: int  # IDLESS: entries without an id we dropped (Pi keeps them)

    @property
    def local_leaf(self) -> str | None:
        """IDLESS: the local id we give an id-less last entry (Pi calls it ``undefined``)."""
        leaf = self.ours.leaf_id
        return leaf if leaf is not None and leaf.startswith(IDLESS_PREFIX) else None

    def pi_leaf(self, entry_id: str) -> str | None:
        """The entry Pi names for our ``entry_id``: a BODILESS entry adds nothing, so its parent."""
        if entry_id == self.local_leaf:
            return UNDEFINED
        if entry_id in self.bodiless:
            return self.ours.entry(entry_id).parent_id
        return entry_id

    def named(self) -> list[str]:
        """Our entries Pi can name."""
        return [e.id for e in self.ours.entries if e.id != self.local_leaf and e.id not in self.bodiless]


def _bodiless(session: Session, path: Path) -> frozenset[str]:
    lines = path.read_bytes().split(b"\n")
    found = set()
    for entry in session.entries:
        try:
            loads(lines[entry.line - 1])
        except ValueError:
            found.add(entry.id)
    return frozenset(found)


def _open(path: Path, pi: Json) -> Wild:
    ours = Session.open(path)
    wild = Wild(path, pi, ours, _bodiless(ours, path),
                sum(w.message == "entry without an id skipped" for w in ours.warnings))
    # What the named differences cover here; a file beyond them needs its own rule.
    assert not any(ours.tree.sorted_children(b) for b in wild.bodiless), "BODILESS entry with children"
    assert all("parentId" not in e for e in pi["entries"] if _idless(e)), "IDLESS entry with a parent"
    return wild


@dataclass
class Refused:
    """A file Pi 1.6.0 refuses to open (``error``: its reason)."""

    path: Path
    error: str


@pytest.fixture(scope="module", params=NAMES)
def wild(request: pytest.FixtureRequest, pi16: PiOracle) -> Wild | Refused:
    """One file, read once for all its tests (pytest runs them together)."""
    require(WILD.is_dir(), f"wild session files not found at {WILD}")
    path = WILD / request.param
    pi = pi16.call("load", file=str(path))
    return Refused(path, pi["error"]) if "error" in pi else _open(path, pi)


def opened(wild: Wild | Refused) -> Wild:
    if isinstance(wild, Refused):
        pytest.skip("Pi refuses the file; test_load compares the refusal")
    return wild


# ----------------------------------------------------------------------- load
def pi_tree(wild: Wild) -> list[Json]:
    """Pi's flattened tree; IDLESS: it lists every id-less entry as the last one, which we show once."""
    tree: list[Json] = wild.pi["tree"]
    last = max((n for n, node in enumerate(tree) if "id" not in node), default=None)
    return [node for n, node in enumerate(tree) if "id" in node or n == last]


def tree_as_pi_shows_it(wild: Wild) -> list[Json]:
    """Our flattened tree without BODILESS entries, our IDLESS leaf without the local id."""
    nodes = [{**node, "childIds": [c for c in node["childIds"] if c not in wild.bodiless]}
             for node in our_tree(wild.ours) if node["id"] not in wild.bodiless]
    return [{k: v for k, v in node.items() if k not in ("id", "parentId")} if node["id"] == wild.local_leaf else node
            for node in nodes]


def test_load(wild: Wild | Refused) -> None:
    if isinstance(wild, Refused):  # so do we, for the same reason
        assert wild.error == "Session file is not a valid pi session: <path>"
        with pytest.raises(NotASessionError, match="not a valid pi session"):
            Session.open(wild.path)
        return
    pi, ours = wild.pi, wild.ours
    assert js(ours.header) == js(pi["header"])
    last = len(pi["entries"]) - 1
    pi_entries = [e for n, e in enumerate(pi["entries"]) if not _idless(e) or n == last]  # IDLESS
    our_entries = [e.data for e in ours.entries if e.id not in wild.bodiless]  # BODILESS
    assert len(pi["entries"]) - len(pi_entries) == wild.dropped
    assert len(our_entries) == len(pi_entries)
    for n, (a, b) in enumerate(zip(our_entries, pi_entries, strict=True)):
        assert js(a) == js(b), f"entry {n}"
    # the leaf is the last entry read, on both sides
    assert ours.leaf_id == (ours.entries[-1].id if len(ours.entries) else None)
    assert pi.get("leafId") == (our_entries[-1].get("id") if our_entries else None)
    assert tree_as_pi_shows_it(wild) == pi_tree(wild)
    assert {k: v for k, v in ours.tree.labels.items() if k in ours.tree} == pi["labels"]
    assert ours.tree.name == pi["sessionName"]
    # lines left out: Pi's entries skip them silently, we warn about each
    lines = [n for n, line in enumerate(wild.path.read_bytes().split(b"\n"), start=1) if line.strip()]
    warned = {w.line for w in ours.warnings if any(word in w.message for word in SKIP_WARNINGS)}
    assert warned == set(lines) - {e.line for e in ours.entries} - {lines[0]}
    assert len(lines) - 1 - len(pi["entries"]) == len(warned) - wild.dropped + len(wild.bodiless)


def test_fix_a_file_is_written_at_our_first_append_not_on_open(wild: Wild | Refused, tmp_path: Path) -> None:
    """Pi 1.6.0 rewrites a v1/v2 file as v3 (and mends a torn last line) when it opens it; loading never
    writes here, and our first append writes exactly the text Pi left, then the new entry."""
    source = opened(wild)
    copy = tmp_path / source.path.name
    copy.write_bytes(before := source.path.read_bytes())
    session = Session.open(copy)
    session.context()
    session.projection()
    assert copy.read_bytes() == before
    pi_text = source.pi["fileTextAfterLoad"].encode("utf-8")
    assert (pi_text != before) == (session.source_version < 3 or not before.endswith(b"\n"))
    session.append([{"type": "session_info", "name": "wild"}])
    after = copy.read_bytes()
    assert after[: len(pi_text)] == pi_text
    appended = after[len(pi_text):].split(b"\n")
    assert len(appended) == 2 and appended[1] == b"" and json.loads(appended[0])["name"] == "wild"


# -------------------------------------------------------------------- context
def context_leaves(wild: Wild) -> list[str]:
    entries = wild.ours.entries
    ids = [e.id for e in entries]
    if len(ids) <= SMALL:
        return ids
    tree = wild.ours.tree
    forks = [i for i in ids if len(tree.sorted_children(i)) != 1]  # branch points and tree leaves
    spread = ids[:: len(ids) // SPREAD]
    return list(dict.fromkeys([*spread, *ids[-TAIL:], *forks, *(e.id for e in entries if e.type == "compaction")]))


def context_as_pi_shows_it(wild: Wild, leaf: str) -> Json:
    ours = our_context(wild.ours, leaf)
    ours["entries"] = [{k: v for k, v in p.items() if k != "id"} if p["id"] == wild.local_leaf else p
                       for p in ours["entries"] if p["id"] not in wild.bodiless]
    return ours


def test_contexts(pi16: PiOracle, wild: Wild | Refused) -> None:
    source = opened(wild)
    leaves = context_leaves(source)
    for start in range(0, len(leaves), CONTEXTS_PER_CALL):
        chunk = leaves[start : start + CONTEXTS_PER_CALL]
        theirs = pi16.call("context", file=str(source.path), leafIds=[source.pi_leaf(leaf) for leaf in chunk])
        for leaf, pi in zip(chunk, theirs, strict=True):
            ours = context_as_pi_shows_it(source, leaf)
            for key in ("messages", "entries", "systemMessage"):
                assert js(ours[key]) == js(pi[key]), f"{key} at {leaf}"
            assert (ours["thinkingLevel"], ours["model"]) == (pi["thinkingLevel"], pi["model"]), leaf
            assert js(list(source.ours.context(leaf).messages)) == js(pi["messages"]), f"live context at {leaf}"


# ----------------------------------------------------------------- compaction
def test_compaction(pi16: PiOracle, wild: Wild | Refused) -> None:
    source = opened(wild)
    session, file, tally = source.ours, source.path, Tally()
    check_projected_tokens(pi16, file, session, None, UNDEFINED)
    for keep in (None, SMALL_KEEP):
        run_case(pi16, file, session, None, UNDEFINED, keep, True, tally)
    named = set(source.named())
    for entry in session.entries:
        if entry.type == "compaction" and entry.parent_id in named:
            run_case(pi16, file, session, entry.parent_id, entry.parent_id, SMALL_KEEP, True, tally)
    leaves = [i for i in source.named() if not session.tree.sorted_children(i)]
    pairs = [(a, b) for a in leaves for b in leaves if a != b][:MAX_BRANCH_PAIRS]
    for old_leaf, target in pairs:
        for budget in BUDGETS:
            check_branch(pi16, file, session, old_leaf, target, budget)


# ---------------------------------------------------------------------- stats
def _zero_usage() -> Json:
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": cost}


def _usages_pi_adds(data: Json) -> Iterator[tuple[Json, str]]:
    """``(holder, key)`` of every usage Pi's ``getSessionStats`` adds up, present or not."""
    kind, message = data.get("type"), data.get("message")
    if kind == "usage" or (kind in ("compaction", "branch_summary") and data.get("usage")):
        yield data, "usage"
    elif kind == "message" and isinstance(message, dict):
        role = message.get("role")
        if role == "assistant" or (role == "toolResult" and message.get("usage")):
            yield message, "usage"


def countable_by_pi(wild: Wild, out: Path) -> bool:
    """STATS: write to ``out`` the file with a zero usage where Pi's stats would throw, and without
    the IDLESS lines we drop; whether a usage was repaired."""
    lines = wild.path.read_bytes().split(b"\n")
    dropped = {w.line for w in wild.ours.warnings if w.message == "entry without an id skipped"}
    repaired = False
    for n, line in enumerate(lines):
        try:
            data = loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        for holder, key in _usages_pi_adds(data):
            usage = holder.get(key)
            if not isinstance(usage, dict):
                holder[key] = _zero_usage()
            elif not isinstance(usage.get("cost"), dict):
                usage["cost"] = _zero_usage()["cost"]
            else:
                continue
            repaired = True
            lines[n] = dumps(data)
    out.write_bytes(b"\n".join(line for n, line in enumerate(lines, start=1) if n not in dropped))
    return repaired


def test_stats(pi16_agent: PiOracle, wild: Wild | Refused, tmp_path: Path) -> None:
    source = opened(wild)
    countable = tmp_path / source.path.name
    if countable_by_pi(source, countable):
        with pytest.raises(OracleError, match=r"reading '(input|total)'"):
            pi16_agent.call("stats", file=str(source.path), contextWindow=200_000)
    assert_stats_match(pi16_agent, source.path, countable)


# ---------------------------------------------------------------------- guard
def test_the_wild_files_exercise_every_comparison() -> None:
    """Guard against vacuous comparisons: the files hold what the tests above are for."""
    require(WILD.is_dir(), f"wild session files not found at {WILD}")
    sessions = {name: Session.open(WILD / name) for name in NAMES}
    to_compact = [name for name, s in sessions.items()
                  if prepare_compaction(s.path_to(), CompactionSettings(keep_recent_tokens=SMALL_KEEP))]
    assert len(sessions) >= 30 and len(to_compact) >= len(sessions) // 2
    assert any(s.source_version == 1 for s in sessions.values())
    assert any(len(s.entries) > SMALL for s in sessions.values())
    assert any(sum(not s.tree.sorted_children(e.id) for e in s.entries) > 1 for s in sessions.values())
    assert any(w.message == "malformed JSON line skipped" for s in sessions.values() for w in s.warnings)
    assert any(w.message == "entry without an id skipped" for s in sessions.values() for w in s.warnings)
    assert any(s.leaf_id and s.leaf_id.startswith(IDLESS_PREFIX) for s in sessions.values())
    assert any(_bodiless(s, WILD / name) for name, s in sessions.items())

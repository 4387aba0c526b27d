"""Differential tests: our session store vs Pi 0.73.1 (through the oracle).

Every generated session (all shapes, several seeds, v1/v2/v3, ~50-2000 entries)
plus Pi's own ``before-compaction.jsonl`` fixture is compared on:

1. migration: entry count, types, parent structure by position, header after
   migration (key order included), and the rewritten file text line by line
   (v1: our deterministic ``%08x`` ids mapped by position to Pi's random ones);
2. tree: Pi's ``getTree`` pre-order (id, parentId, depth, label,
   labelTimestamp, childIds), labels, session name, leaf;
3. context: ``buildSessionContext`` for the leaf, ``null``, ``undefined``, an
   unknown id and sampled entry ids (every entry for small sessions), compared
   as identical JSON (key order and int/float kind included);
4. fork: Pi 1.6.0's ``createBranchedSession`` at a few leaves (path entries
   re-chained, recreated labels, header, file written now or deferred);
5. listing: ``SessionManager.list`` over a directory of several sessions.

v1 migration draws random ids in Pi, so everything id-based runs on the text
Pi leaves after its load (``fileTextAfterLoad``), fed to both sides.
Deliberate differences (documented in ``server/pi_sessiond/store``) are
asserted explicitly in tests named after them.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests.parity.oracle import UNDEFINED, OracleError, PiOracle

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.context import build_session_context
from pi_sessiond.store.errors import NotASessionError
from pi_sessiond.store.fork import fork_session
from pi_sessiond.store.listing import list_sessions
from pi_sessiond.store.session import Session

pytestmark = pytest.mark.parity

Json = dict[str, Any]


@dataclass(frozen=True)
class Case:
    shape: str
    seed: int
    entries: int
    version: int = 3
    every: int | None = None

    @property
    def name(self) -> str:
        every = f"-c{self.every}" if self.every else ""
        return f"{self.shape}-s{self.seed}-n{self.entries}-v{self.version}{every}"

    def lines(self) -> list[Json]:
        return generate(
            seed=self.seed, entries=self.entries, shape=self.shape, version=self.version, compaction_every=self.every
        )


CASES = [
    Case("linear", 1, 50),
    Case("linear", 2, 400, version=1),
    Case("linear", 3, 300, version=2),
    Case("long", 4, 2000, every=450),
    Case("long", 5, 1200, version=1, every=250),
    Case("long", 6, 700, version=2, every=200),
    Case("branchy", 7, 60),
    Case("branchy", 8, 600),
    Case("branchy", 9, 300, version=2),
    Case("kitchen-sink", 10, 80),
    Case("kitchen-sink", 11, 500),
]
FIXTURE = "pi-fixture"
ALL = [c.name for c in CASES] + [FIXTURE]
SMALL = 100  # sessions up to this size get a context for every entry
SAMPLED_LEAVES = 8


@dataclass
class Loaded:
    """One session as both sides see it."""

    original: Path  # the input file (v1/v2/v3)
    migrated: Path  # Pi's text after its first load: stable ids for both sides
    pi: Json  # oracle ``load`` of ``original``
    ours: Session = field(init=False)  # our store on ``migrated``

    def __post_init__(self) -> None:
        self.ours = Session.open(self.migrated)


_CACHE: dict[str, Loaded] = {}


@pytest.fixture
def loaded(request: pytest.FixtureRequest, pi: PiOracle, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    name: str = request.param
    if name not in _CACHE:
        if name == FIXTURE:
            original = request.getfixturevalue("pi_fixture_path")
        else:
            case = next(c for c in CASES if c.name == name)
            lines = case.lines()
            original = tmp_path_factory.mktemp(name) / f"{name}.jsonl"
            write(original, lines)
        result = pi.call("load", file=str(original))
        migrated = tmp_path_factory.mktemp(f"{name}-migrated") / f"{name}.jsonl"
        migrated.write_text(result["fileTextAfterLoad"], encoding="utf-8")
        _CACHE[name] = Loaded(original, migrated, result)
    return _CACHE[name]


def sessions(*names: str) -> pytest.MarkDecorator:
    return pytest.mark.parametrize("loaded", list(names or ALL), indirect=True)


def canonical(value: Any) -> str:
    """JSON text as the comparison key: key order and int-vs-float are significant."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def assert_same_json(ours: Any, theirs: Any, what: str) -> None:
    assert ours == theirs, what
    assert canonical(ours) == canonical(theirs), f"{what}: same values, different JSON text"


def parents_by_position(entries: list[Json]) -> list[int | str | None]:
    index = {e["id"]: i for i, e in enumerate(entries)}
    out: list[int | str | None] = []
    for e in entries:
        pid = e.get("parentId")
        out.append(None if pid is None else index.get(pid, f"missing:{pid}"))
    return out


# ------------------------------------------------------------------ migration
@sessions()
def test_migration_structure_and_header(loaded: Loaded) -> None:
    ours = Session.open(loaded.original)
    pi_entries = loaded.pi["entries"]
    our_entries = [e.data for e in ours.entries]
    assert len(our_entries) == len(pi_entries)
    assert [e["type"] for e in our_entries] == [e["type"] for e in pi_entries]
    assert parents_by_position(our_entries) == parents_by_position(pi_entries)
    assert_same_json(ours.header, loaded.pi["header"], "header after migration")
    assert ours.id == loaded.pi["sessionId"]
    pi_leaf = loaded.pi["leafId"]
    leaf_pos = next(i for i, e in enumerate(pi_entries) if e["id"] == pi_leaf)
    assert ours.leaf_id == ours.entries[leaf_pos].id


_HEX8 = re.compile(r'"([0-9a-f]{8})"')


def assert_rewrite_matches(ours: Session, pi: Json, original: Path) -> None:
    """Our ``render()`` after migration vs Pi's rewritten file, line by line."""
    pi_entries = pi["entries"]
    rendered = ours.render().decode("utf-8")
    if ours.source_version < 2:
        # our v1 ids are %08x of the position; Pi's are random: map by position
        assert [e.id for e in ours.entries] == [f"{k:08x}" for k in range(1, len(ours.entries) + 1)]
        mapping = {e.id: p["id"] for e, p in zip(ours.entries, pi_entries, strict=True)}
        rendered = _HEX8.sub(lambda m: f'"{mapping.get(m.group(1), m.group(1))}"', rendered)
    pi_text = pi["fileTextAfterLoad"]
    our_lines, pi_lines = rendered.split("\n"), pi_text.split("\n")
    assert len(our_lines) == len(pi_lines)
    for n, (a, b) in enumerate(zip(our_lines, pi_lines, strict=True), start=1):
        assert a == b, f"line {n} differs"
    if ours.source_version < 3:
        assert ours._file.needs_rewrite  # written back (once) like Pi
    else:
        assert pi_text == original.read_text(encoding="utf-8")  # v3: nobody rewrites


@sessions()
def test_migration_rewrite_matches_pi_file_text(loaded: Loaded) -> None:
    assert_rewrite_matches(Session.open(loaded.original), loaded.pi, loaded.original)


def test_rewritten_numbers_are_formatted_like_json_stringify(pi: PiOracle, tmp_path: Path) -> None:
    path = tmp_path / "v1-floats.jsonl"
    path.write_text(
        '{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user",'
        '"content":"hi","timestamp":1735689601000,"x":0.000003,"y":1e16}}\n',
        encoding="utf-8",
    )
    theirs = pi.call("load", file=str(path))["fileTextAfterLoad"].split("\n")[1]
    ours = Session.open(path).render().decode("utf-8").split("\n")[1]
    assert '"x":0.000003,"y":10000000000000000}' in theirs
    assert ours.replace('"00000001"', '"' + json.loads(theirs)["id"] + '"') == theirs


@sessions()
def test_loaded_entries_equal_pi_entries(loaded: Loaded) -> None:
    ours = [e.data for e in loaded.ours.entries]
    assert len(ours) == len(loaded.pi["entries"])
    for n, (a, b) in enumerate(zip(ours, loaded.pi["entries"], strict=True)):
        assert_same_json(a, b, f"entry {n}")


# ----------------------------------------------------------------------- tree
def our_tree(session: Session) -> list[Json]:
    tree = session.tree
    return [
        {
            "id": entry.id,
            "parentId": entry.parent_id,
            "depth": depth,
            "label": tree.labels.get(entry.id),
            "labelTimestamp": tree.label_timestamps.get(entry.id),
            "childIds": [c.id for c in tree.sorted_children(entry.id)],
        }
        for entry, depth in tree.walk()
    ]


@sessions()
def test_tree_labels_name_leaf(loaded: Loaded) -> None:
    ours, pi = loaded.ours, loaded.pi
    assert our_tree(ours) == pi["tree"]
    assert [r.id for r in ours.tree.roots()] == [n["id"] for n in pi["tree"] if n["depth"] == 0]
    resolved = {k: v for k, v in ours.tree.labels.items() if k in ours.tree}
    assert resolved == pi["labels"]
    assert ours.tree.name == pi["sessionName"]
    assert ours.leaf_id == pi["leafId"]


def test_generated_sessions_exercise_labels_names_and_branches() -> None:
    """Guard against a vacuous tree comparison: some case has labels, a name, branching."""
    sink = Case("kitchen-sink", 11, 500)
    lines = generate(seed=sink.seed, entries=sink.entries, shape=sink.shape)
    types = {line["type"] for line in lines}
    assert {"label", "session_info", "branch_summary", "compaction"} <= types


# -------------------------------------------------------------------- context
def leaf_choices(session: Session) -> list[str | None]:
    ids = [e.id for e in session.entries]
    if len(ids) <= SMALL:
        sample = ids
    else:
        rng = random.Random(len(ids))
        sample = sorted(rng.sample(ids, SAMPLED_LEAVES), key=ids.index)
        sample += [e.id for e in session.entries if e.type == "compaction"][:3]
    return [session.leaf_id, None, UNDEFINED, "no-such-entry", "", *sample]


def our_context(session: Session, leaf: str | None) -> Json:
    ctx = build_session_context(session.entries) if leaf == UNDEFINED else session.context(leaf)
    result: Json = json.loads(canonical(ctx.to_json()))
    return result


@sessions()
def test_context_for_many_leaves(pi: PiOracle, loaded: Loaded) -> None:
    leaves = leaf_choices(loaded.ours)
    theirs = []
    for start in range(0, len(leaves), 20):
        theirs += pi.call("context", file=str(loaded.migrated), leafIds=leaves[start : start + 20])
    assert len(theirs) == len(leaves)
    for leaf, pi_ctx in zip(leaves, theirs, strict=True):
        ours = our_context(loaded.ours, leaf)
        assert ours["thinkingLevel"] == pi_ctx["thinkingLevel"], leaf
        assert_same_json(ours["model"], pi_ctx["model"], f"model at {leaf!r}")
        assert len(ours["messages"]) == len(pi_ctx["messages"]), leaf
        assert_same_json(ours["messages"], pi_ctx["messages"], f"messages at {leaf!r}")


# ----------------------------------------------------------------------- fork
def fork_leaves(session: Session) -> list[str]:
    entries = session.entries
    labelled = [t for t in session.tree.labels if t in session.tree]
    first_user = next(e.id for e in entries if e.role == "user")  # no assistant on its path: deferred
    picks = [entries[-1].id, entries[len(entries) // 2].id, first_user, *labelled[-2:]]
    picks += [e.id for e in entries if e.type == "label"][:1]  # fork *at* a label entry
    return list(dict.fromkeys(picks))


def _lines(text: str) -> list[Json]:
    return [json.loads(line) for line in text.split("\n") if line]


def _assert_fork_equal(ours: Session, theirs: Json, source: Path) -> None:
    pi_entries = theirs["entries"]
    our_entries = [e.data for e in ours.entries]
    assert len(our_entries) == len(pi_entries)
    n_labels = sum(1 for e in pi_entries if e["type"] == "label")
    n_path = len(pi_entries) - n_labels
    # the path: same entries verbatim (same ids, same JSON)
    for n in range(n_path):
        assert_same_json(our_entries[n], pi_entries[n], f"fork path entry {n}")
    # recreated labels: fresh ids; same target/label/timestamp, chained after the path
    for n in range(n_path, len(pi_entries)):
        a, b = our_entries[n], pi_entries[n]
        assert list(a) == list(b)
        assert (a["type"], a["targetId"], a["label"], a["timestamp"]) == (
            b["type"],
            b["targetId"],
            b["label"],
            b["timestamp"],
        )
    assert parents_by_position(our_entries) == parents_by_position(pi_entries)
    leaf_pos = next(i for i, e in enumerate(pi_entries) if e["id"] == theirs["leafId"])
    assert ours.leaf_id == ours.entries[leaf_pos].id
    # header: same keys in the same order; fresh id/time; parentSession = the source file
    assert list(ours.header) == list(theirs["header"]) == ["type", "version", "id", "timestamp", "cwd", "parentSession"]
    assert ours.header["version"] == theirs["header"]["version"] == 3
    assert ours.header["cwd"] == theirs["header"]["cwd"]
    assert Path(ours.header["parentSession"]) == source.resolve()
    assert Path(theirs["header"]["parentSession"]).name == source.name == Path(theirs["sourcePath"]).name
    assert re.fullmatch(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}", ours.header["id"])
    # written now or deferred: Pi 1.6.0 writes at once when the path has a user or assistant message
    assert ours.path is not None
    has_conversation = any(e.get("message", {}).get("role") in ("user", "assistant") for e in pi_entries)
    assert ours.path.exists() == has_conversation
    assert theirs["fileText"] is None or has_conversation
    assert ours.path.name == f"{re.sub(r'[:.]', '-', ours.header['timestamp'])}_{ours.id}.jsonl"
    if theirs["fileText"] is not None:
        on_disk, pi_disk = _lines(ours.path.read_text(encoding="utf-8")), _lines(theirs["fileText"])
        assert len(on_disk) == len(pi_disk) == len(pi_entries) + 1
        assert on_disk[1:] == our_entries
        assert [list(x) for x in on_disk] == [list(x) for x in pi_disk]


@sessions(*(c.name for c in CASES if c.entries <= 600), FIXTURE)
def test_fork_at_several_leaves(pi16: PiOracle, loaded: Loaded, tmp_path: Path) -> None:
    """Against Pi 1.6.0's ``createBranchedSession`` (re-chained parents; the migrated text is a v3 file)."""
    for n, leaf in enumerate(fork_leaves(loaded.ours)):
        source = Session.open(loaded.migrated)
        ours = fork_session(source, leaf, tmp_path / f"fork{n}")
        theirs = pi16.call("fork", file=str(loaded.migrated), leafId=leaf)
        _assert_fork_equal(ours, theirs, loaded.migrated)


@sessions("branchy-s7-n60-v3")
def test_fork_unknown_entry_raises_on_both_sides(pi16: PiOracle, loaded: Loaded, tmp_path: Path) -> None:
    with pytest.raises(OracleError, match="not found"):
        pi16.call("fork", file=str(loaded.migrated), leafId="no-such-entry")
    with pytest.raises(KeyError):  # UnknownEntryError
        fork_session(Session.open(loaded.migrated), "no-such-entry", tmp_path)


# -------------------------------------------------------------------- listing
LISTED = [
    Case("linear", 21, 60),
    Case("linear", 22, 150, version=1),
    Case("long", 23, 400, version=2, every=120),
    Case("branchy", 24, 250),
    Case("branchy", 25, 90, version=2),
    Case("kitchen-sink", 26, 120),
]


def test_listing(pi: PiOracle, tmp_path: Path) -> None:
    for case in LISTED:
        lines = case.lines()
        header = lines[0]
        name = f"{re.sub(r'[:.]', '-', header['timestamp'])}_{header['id']}.jsonl"
        write(tmp_path / name, lines)
    shutil.copy(tmp_path / next(p.name for p in sorted(tmp_path.iterdir())), tmp_path / "copy-of-first.jsonl")
    (tmp_path / "not-a-session.jsonl").write_text('{"type":"message"}\n', encoding="utf-8")
    (tmp_path / "ignored.txt").write_text("x\n", encoding="utf-8")
    theirs = pi.call("list", dir=str(tmp_path))
    ours = list_sessions(tmp_path)
    keys = ("name", "cwd", "created", "modified", "messageCount", "firstMessage")

    def row(info: Json) -> tuple[Any, ...]:
        session_id = info["sessionId"] if "sessionId" in info else info.get("id")  # Pi calls it `id`
        return (Path(info["path"]).name, session_id, *(info.get(k) for k in keys))

    assert len(ours) == len(theirs) == len(LISTED) + 1
    assert sorted(map(row, ours)) == sorted(map(row, theirs))
    # order: newest first; only rows with a unique `modified` have a defined position
    modified = [info["modified"] for info in theirs]
    assert [info["modified"] for info in ours] == modified
    unique = {m for m in modified if modified.count(m) == 1}
    assert [row(i) for i in ours if i["modified"] in unique] == [row(i) for i in theirs if i["modified"] in unique]


# ------------------------------------------------------- deliberate differences
def test_fix_self_parented_entry_never_hangs_where_pi_loops(tmp_path: Path) -> None:
    """tree.py: paths stop at an entry already on the path; Pi loops forever."""
    lines = generate(seed=31, entries=50, shape="linear")
    lines[5]["parentId"] = lines[5]["id"]
    path = tmp_path / "self.jsonl"
    write(path, lines)
    ours = Session.open(path)
    ctx = ours.context(lines[5]["id"])
    assert len(ctx.messages) == 1  # just the self-parented entry
    assert [e.id for e in ours.path_to(lines[5]["id"])] == [lines[5]["id"]]
    with PiOracle(timeout=3) as short:
        # the tree is parity: Pi treats a self-parented entry as a root
        tree = short.call("load", file=str(path))["tree"]
        assert our_tree(ours) == tree
        with pytest.raises(OracleError, match="did not answer"):
            short.call("context", file=str(path), leafIds=[lines[5]["id"]])


def test_fix_entries_on_a_parent_cycle_are_shown_where_pi_hides_them(pi16: PiOracle, tmp_path: Path) -> None:
    """tree.py: a parent cycle a->b->a and everything under it (the leaf too) follow the rooted entries.

    Pi 1.6.0's ``getTree`` starts only at roots, so the cycle, the 38 entries
    under it and the leaf are missing from its tree; ours shows Pi's tree
    unchanged, then the cycle from its member written first.
    """
    lines = generate(seed=32, entries=50, shape="linear")
    a, b = lines[10], lines[11]
    a["parentId"] = b["id"]
    path = tmp_path / "cycle.jsonl"
    write(path, lines)
    ours = Session.open(path)
    theirs = pi16.call("load", file=str(path))["tree"]
    tree = our_tree(ours)
    hidden = {line["id"] for line in lines[10:]}
    assert hidden.isdisjoint(n["id"] for n in theirs) and ours.leaf_id in hidden
    assert tree[: len(theirs)] == theirs  # what Pi shows, as Pi shows it
    shown = tree[len(theirs):]
    assert [n["id"] for n in shown] == [line["id"] for line in lines[10:]]
    assert shown[0] == {**shown[0], "id": a["id"], "parentId": b["id"], "depth": 0}
    assert [n["depth"] for n in shown] == list(range(len(shown)))
    assert [e.id for e in ours.path_to(a["id"])] == [b["id"], a["id"]]


def test_headerless_file_is_refused_as_pi_1_6_0_refuses_it(pi16: PiOracle, tmp_path: Path) -> None:
    """session.py: a file without a header is refused, untouched, with Pi 1.6.0's reason (0.73.1 overwrote it)."""
    lines = generate(seed=33, entries=50, shape="linear")[1:]
    path = tmp_path / "noheader.jsonl"
    write(path, lines)
    before = path.read_bytes()
    assert pi16.call("load", file=str(path)) == {"error": "Session file is not a valid pi session: <path>"}
    with pytest.raises(NotASessionError) as caught:
        Session.open(path)
    assert str(caught.value).startswith(f"Session file is not a valid pi session: {path} (no session header")
    assert path.read_bytes() == before


# ------------------------------------------------------------- hand-made edges
def test_session_name_is_trimmed_like_pi(pi: PiOracle, tmp_path: Path) -> None:
    """Pi trims the stored name; a whitespace-only last name clears it (notes §5)."""
    base = generate(seed=34, entries=50, shape="linear")
    results = {}
    for label, names in {"padded": ["  Padded name \n"], "blank-clears": ["Real", "   "]}.items():
        lines = [dict(line) for line in base]
        prev = lines[-1]
        for k, value in enumerate(names):
            info = {"type": "session_info", "id": f"ffff000{k}", "parentId": prev["id"], "timestamp": prev["timestamp"]}
            info["name"] = value
            lines.append(info)
            prev = info
        path = tmp_path / f"{label}.jsonl"
        write(path, lines)
        results[label] = (Session.open(path).tree.name, pi.call("load", file=str(path))["sessionName"])
    listed = {Path(i["path"]).stem: i.get("name") for i in list_sessions(tmp_path)}
    pi_listed = {Path(i["path"]).stem: i.get("name") for i in pi.call("list", dir=str(tmp_path))}
    assert pi_listed == {"padded": "Padded name", "blank-clears": None}
    assert results == {"padded": ("Padded name", "Padded name"), "blank-clears": (None, None)}
    assert listed == pi_listed


# ----------------------------------------------- odd but valid files, all aspects
def _v3(seed: int, n: int = 40, shape: str = "linear") -> list[Json]:
    return generate(seed=seed, entries=n, shape=shape)


def _text(lines: list[Json]) -> str:
    return "".join(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n" for line in lines)


def _garbage_first_line() -> str:
    return "this is not json\n" + _text(_v3(41))


def _duplicate_header() -> str:
    lines = _v3(42)
    return _text([*lines[:10], dict(lines[0], id="second-header"), *lines[10:]])


def _orphan_and_siblings_with_equal_timestamps() -> str:
    lines = _v3(43, 60, "branchy")
    lines[20] = dict(lines[20], parentId="gone0000")  # orphan: a root in file order
    twin = dict(lines[30], id="twin0001")  # same parent, same timestamp: file order kept
    return _text([*lines[:31], twin, *lines[31:]])


def _crlf() -> str:
    return _text(_v3(44)).replace("\n", "\r\n")


def _v1_compaction_indices() -> str:
    lines = generate(seed=45, entries=60, shape="linear", version=1)
    summary = {"type": "compaction", "timestamp": lines[-1]["timestamp"], "summary": "s", "tokensBefore": 10}
    extra = [
        dict(summary, firstKeptEntryIndex=len(lines)),  # itself
        dict(summary, firstKeptEntryIndex=len(lines) + 5),  # forward
        dict(summary, firstKeptEntryIndex=0),  # the header
        dict(summary, firstKeptEntryIndex=999),  # out of range
        dict(summary, firstKeptEntryIndex=3),  # a normal one, last: it decides the context
    ]
    return _text([*lines, *extra])


def _v1_with_id_keys_and_hook_message() -> str:
    lines = generate(seed=46, entries=40, shape="linear", version=1)
    lines[2] = {"id": "keepmeid", **lines[2], "parentId": "whatever"}  # overwritten in place
    hook = {"role": "hookMessage", "customType": "x", "content": "hi", "display": True, "timestamp": 1}
    lines.append({"type": "message", "timestamp": lines[-1]["timestamp"], "message": hook})
    return _text(lines)


EDGE_FILES = {
    "garbage-first-line": _garbage_first_line,
    "duplicate-header": _duplicate_header,
    "orphan-and-equal-timestamps": _orphan_and_siblings_with_equal_timestamps,
    "crlf": _crlf,
    "v1-compaction-indices": _v1_compaction_indices,
    "v1-id-keys-and-hook-message": _v1_with_id_keys_and_hook_message,
}


@pytest.mark.parametrize("kind", list(EDGE_FILES))
def test_odd_files_all_aspects(pi: PiOracle, tmp_path: Path, kind: str) -> None:
    original = tmp_path / f"{kind}.jsonl"
    original.write_bytes(EDGE_FILES[kind]().encode("utf-8"))
    result = pi.call("load", file=str(original))
    migrated = tmp_path / "migrated" / original.name
    migrated.parent.mkdir()
    migrated.write_text(result["fileTextAfterLoad"], encoding="utf-8", newline="")
    # migration, by position
    first = Session.open(original)
    assert [e.type for e in first.entries] == [e["type"] for e in result["entries"]]
    assert parents_by_position([e.data for e in first.entries]) == parents_by_position(result["entries"])
    assert_same_json(first.header, result["header"], "header")
    if first.source_version < 3:
        assert_rewrite_matches(first, result, original)
    # everything id-based on Pi's text
    ours = Session.open(migrated)
    for n, (a, b) in enumerate(zip([e.data for e in ours.entries], result["entries"], strict=True)):
        assert_same_json(a, b, f"entry {n}")
    assert our_tree(ours) == result["tree"]
    assert ours.tree.name == result["sessionName"]
    assert ours.leaf_id == result["leafId"]
    leaves = leaf_choices(ours)
    for leaf, pi_ctx in zip(leaves, pi.call("context", file=str(migrated), leafIds=leaves), strict=True):
        assert_same_json(our_context(ours, leaf), pi_ctx, f"context at {leaf!r}")


def test_fork_cases_cover_deferred_writes_and_recreated_labels(pi: PiOracle, tmp_path: Path) -> None:
    """Guard against vacuous fork comparisons: both write modes and label entries occur."""
    name = "branchy-s8-n600-v3"
    case = next(c for c in CASES if c.name == name)
    path = tmp_path / f"{name}.jsonl"
    write(path, generate(seed=case.seed, entries=case.entries, shape=case.shape))
    session = Session.open(path)
    results = [pi.call("fork", file=str(path), leafId=leaf) for leaf in fork_leaves(session)]
    assert any(r["fileText"] is None for r in results)
    assert any(r["fileText"] is not None for r in results)
    assert any(e["type"] == "label" for r in results for e in r["entries"])

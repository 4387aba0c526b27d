"""The loader on mutated real lines: never crashes, never writes, says where it skipped (or refuses a broken header)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import SHARED_FIXTURE, require

from pi_sessiond.store.errors import NotASessionError
from pi_sessiond.store.session import Session

_LINES: list[bytes] = SHARED_FIXTURE.read_bytes().splitlines()[:120] if SHARED_FIXTURE.is_file() else []

mutation = st.one_of(
    st.tuples(st.just("truncate"), st.integers(0, 4000)),
    st.tuples(st.just("flip"), st.integers(0, 4000), st.integers(0, 255)),
    st.tuples(st.just("insert"), st.integers(0, 4000), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("drop"), st.integers(0, 4000)),
    st.tuples(st.just("field"), st.sampled_from(["id", "parentId", "type", "timestamp", "message"]),
              st.sampled_from([None, 0, "", "x", [], {}, "session", "00000001"])),
)


def _mutate(line: bytes, op: tuple) -> bytes:  # type: ignore[type-arg]
    kind = op[0]
    if kind == "truncate":
        return line[: op[1] % (len(line) + 1)]
    if kind == "flip":
        i = op[1] % max(len(line), 1)
        return line[:i] + bytes([op[2]]) + line[i + 1 :]
    if kind == "insert":
        i = op[1] % (len(line) + 1)
        return line[:i] + op[2] + line[i:]
    if kind == "drop":
        i = op[1] % max(len(line), 1)
        return line[:i] + line[i + 1 :]
    try:
        obj = json.loads(line)
    except ValueError:
        return line
    if not isinstance(obj, dict):
        return line
    obj[op[1]] = op[2]
    return json.dumps(obj).encode()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_fixture_lines_load_without_crash_or_write(tmp_path: Path, data: st.DataObject) -> None:
    require(bool(_LINES), f"Pi fixture not found at {SHARED_FIXTURE}")
    lines = list(_LINES)
    picks = data.draw(st.lists(st.tuples(st.integers(0, len(lines) - 1), mutation), min_size=1, max_size=6))
    for index, op in picks:
        lines[index] = _mutate(lines[index], op)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines) + data.draw(st.sampled_from([b"\n", b""])))
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    try:
        session = Session.open(path)
    except NotASessionError:  # a mutated header: refused, and still not written
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        return
    session.context()
    list(session.tree.walk())
    for entry in session.entries[::10]:
        session.context(entry.id)
    total = path.read_bytes().count(b"\n") + 1  # an inserted newline makes one line two
    for warning in session.warnings:
        assert 1 <= warning.line <= total
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest

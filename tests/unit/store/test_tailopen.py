"""A session's first context read from the end of its file (``store/tailopen.py``) is the whole file's.

Every comparison is against ``Session.open`` of the same file (itself checked
against Pi 1.6.0 in ``tests/parity``). ``min_bytes=1`` makes small files open
tail-first; the first window is a quarter of the file, so the growing window is
exercised too.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.unit.store.helpers import HEADER, chain, compacted, compaction, thinking, write_lines

from pi_sessiond.examples.generator import generate, write
from pi_sessiond.store.context import SessionContext
from pi_sessiond.store.session import Session
from pi_sessiond.store.tailopen import TailRead, open_tail

BIG = 1 << 40


def tail_context(path: Path) -> tuple[TailRead | None, SessionContext | None]:
    tail = open_tail(path, BIG, min_bytes=1)
    if tail is None:
        return None, None
    return tail, tail.context(Session(tail.header, tail.tree, path).context())


def assert_same_as_full(path: Path) -> TailRead:
    tail, early = tail_context(path)
    assert tail is not None and early is not None, "the file should open tail-first"
    full = Session.open(path)
    assert tail.tree.leaf_id == full.leaf_id
    assert len(tail.tree.entries) < len(full.entries)  # only the end was read
    context = full.context()
    assert (early.thinking_level, early.model) == (context.thinking_level, context.model)
    assert json.dumps(list(early.messages)) == json.dumps(list(context.messages))
    return tail


@pytest.mark.parametrize(("shape", "seed", "entries", "every"), [
    ("long", 1, 3000, 1000), ("long", 2, 5000, 2000), ("pi16", 3, 2500, 600), ("pi16", 4, 4000, 900),
    ("linear", 5, 3000, 700),
])
def test_generated_sessions_give_the_whole_files_context(tmp_path: Path, shape: str, seed: int, entries: int,
                                                         every: int) -> None:
    path = tmp_path / f"{shape}.jsonl"
    write(path, generate(seed=seed, entries=entries, shape=shape, compaction_every=every))
    assert_same_as_full(path)


def test_the_thinking_level_from_before_the_tail_is_the_newest_one(tmp_path: Path) -> None:
    lines = [thinking("t0", None, "low"), *chain(400, parent="t0")]
    lines.insert(200, thinking("t1", lines[199]["id"], "high"))
    lines[201]["parentId"] = "t1"
    lines += [compaction("c1", lines[-1]["id"], lines[-10]["id"]), *chain(20, 1000, "c1")]
    tail = assert_same_as_full(write_lines(tmp_path / "s.jsonl", lines))
    assert tail.speculated and tail.thinking == "high"


def test_a_thinking_level_on_the_tail_s_path_needs_no_guess(tmp_path: Path) -> None:
    lines = compacted(300, 30)
    lines.append(thinking("t9", lines[-1]["id"], "medium"))
    lines += chain(5, 2000, "t9")
    tail = assert_same_as_full(write_lines(tmp_path / "s.jsonl", lines))
    assert not tail.speculated


def test_no_thinking_level_anywhere_is_off(tmp_path: Path) -> None:
    tail = assert_same_as_full(write_lines(tmp_path / "s.jsonl", compacted(300, 30)))
    assert tail.speculated and tail.thinking == "off"


def test_a_compaction_that_keeps_nothing(tmp_path: Path) -> None:
    lines = chain(300)
    lines.append({**compaction("c1", lines[-1]["id"], "c1"), "firstKeptEntryId": "c1"})
    lines += chain(10, 500, "c1")
    assert_same_as_full(write_lines(tmp_path / "s.jsonl", lines))


def test_a_kept_range_longer_than_the_first_window_grows_it(tmp_path: Path) -> None:
    lines = compacted(400, 10, kept_back=150)  # the kept range is over a quarter of the file
    assert_same_as_full(write_lines(tmp_path / "s.jsonl", lines))


@pytest.mark.parametrize("case", ["no compaction", "kept range above half", "version 2", "no header", "small"])
def test_files_the_tail_cannot_answer_for_are_opened_in_full(tmp_path: Path, case: str) -> None:
    path = tmp_path / "s.jsonl"
    if case == "no compaction":
        write_lines(path, chain(300))
    elif case == "kept range above half":
        write_lines(path, compacted(300, 10, kept_back=250))
    elif case == "version 2":
        write_lines(path, [{**HEADER, "version": 2}, *compacted(300, 30)], header=False)
    elif case == "no header":
        write_lines(path, compacted(300, 30), header=False)
    else:
        write_lines(path, compacted(300, 30))
        assert open_tail(path, BIG, min_bytes=path.stat().st_size + 1) is None
        assert open_tail(path, BIG, min_bytes=0) is None  # 0: the setting is off
        return
    assert open_tail(path, BIG, min_bytes=1) is None


def test_a_newest_hit_that_is_not_a_line_of_its_own_is_not_guessed_at(tmp_path: Path) -> None:
    lines = [thinking("t0", None, "low"), *chain(400, parent="t0")]
    call = {"type": "toolCall", "id": "k", "name": "x", "arguments": {"type": "thinking_level_change", "id": "z"}}
    lines[150]["message"]["content"].append(call)  # an assistant answer's arguments, newer than t0
    lines += [compaction("c1", lines[-1]["id"], lines[-10]["id"]), *chain(20, 1000, "c1")]
    assert open_tail(write_lines(tmp_path / "s.jsonl", lines), BIG, min_bytes=1) is None


def test_fix_a_thinking_level_on_an_abandoned_branch_is_guessed_until_the_whole_file_is_read(tmp_path: Path) -> None:
    """The one guess (module docstring): the newest change before the tail, here on a branch the path left.

    ``service/sessions/loading.py`` compares once the whole file is read and tells the
    client (``tests/e2e/test_tail_open.py``); this shows the guess itself.
    """
    lines = [thinking("t0", None, "low"), *chain(200, parent="t0")]
    fork_point = lines[100]["id"]
    lines += [thinking("t1", lines[-1]["id"], "high"), *chain(5, 500, "t1")]  # the abandoned branch
    lines += chain(300, 1000, fork_point)  # the path goes on from the fork point
    lines += [compaction("c1", lines[-1]["id"], lines[-10]["id"]), *chain(20, 2000, "c1")]
    path = write_lines(tmp_path / "s.jsonl", lines)
    tail, early = tail_context(path)
    assert tail is not None and early is not None and tail.speculated
    full = Session.open(path).context()
    assert (early.thinking_level, full.thinking_level) == ("high", "low")
    assert list(early.messages) == list(full.messages)


def test_bad_lines_inside_the_tail_read_as_the_full_open_reads_them(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "s.jsonl", compacted(300, 40))
    text = path.read_text().splitlines(keepends=True)
    text.insert(len(text) - 5, "{not json\n")
    text.insert(len(text) - 3, "\n")
    path.write_text("".join(text) + '{"type":"message","id":"torn","parentId"')  # a torn last line
    assert_same_as_full(path)


@pytest.mark.parametrize("chunk", [31, 32, 33, 50, 1 << 20])
def test_the_search_finds_the_newest_hit_across_chunk_borders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              chunk: int) -> None:
    import os
    import random

    from pi_sessiond.store import tailopen

    monkeypatch.setattr(tailopen, "_SEARCH_CHUNK", chunk)
    needle = b'"type":"thinking_level_change"'
    rng = random.Random(chunk)
    for _ in range(40):
        data = bytearray(rng.randbytes(rng.randrange(0, 400)))
        for _ in range(rng.randrange(0, 4)):
            at = rng.randrange(0, len(data) + 1)
            data[at:at] = needle
        path = tmp_path / "f"
        path.write_bytes(bytes(data))
        lo, hi = rng.randrange(0, 20), len(data) - rng.randrange(0, 20)
        fd = os.open(path, os.O_RDONLY)
        try:
            assert tailopen._newest(fd, needle, lo, hi) == bytes(data).rfind(needle, lo, max(lo, hi))
        finally:
            os.close(fd)


def test_a_file_without_any_compaction_is_given_up_after_the_first_window(tmp_path: Path) -> None:
    from pi_sessiond.store import tailopen

    path = write_lines(tmp_path / "s.jsonl", chain(2000))
    before = tailopen.STATS["tailBytesRead"]
    assert open_tail(path, BIG, min_bytes=1) is None
    read = tailopen.STATS["tailBytesRead"] - before
    assert read <= path.stat().st_size // 4 + tailopen._HEADER_PROBE  # one window; the search does not count

"""The liveness watch looks at the sessions that changed, not at every open one."""

from __future__ import annotations

import asyncio
from pathlib import Path

from pi_protocol.params import OpenSessionParams

from .fakes import make_daemon, session_file


def test_a_check_after_an_open_reads_only_that_session_and_a_poll_only_changed_lock_files(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    paths = [session_file(tmp_path, f"s{i}.jsonl", seed=i, entries=10) for i in range(5)]
    keys = [daemon.open_session(OpenSessionParams(path=str(p))).session_id for p in paths]
    watch = daemon.live_watch
    watch.check(set())  # what the opens named (no event loop here: soon() only records them)
    assert set(watch._seen) == set(keys)
    watch._seen.clear()
    watch.soon(keys[2])
    watch.check(set())
    assert set(watch._seen) == {keys[2]}
    watch._seen.clear()
    stats = watch._stats
    stats.changed({k: p for k, p in zip(keys, paths, strict=True)})  # the poll's first look: every one is new
    lock = paths[4].with_name(paths[4].name + ".lock")
    lock.write_text("{}")
    changed = stats.changed({k: p for k, p in zip(keys, paths, strict=True)})
    assert changed == {keys[4]}
    watch.check(changed)
    assert set(watch._seen) == {keys[4]}


async def test_soon_on_the_event_loop_checks_the_session_it_names(tmp_path: Path) -> None:
    daemon, _ = make_daemon(tmp_path)
    paths = [session_file(tmp_path, f"s{i}.jsonl", seed=i, entries=10) for i in range(4)]
    keys = [daemon.open_session(OpenSessionParams(path=str(p))).session_id for p in paths]
    watch = daemon.live_watch
    try:
        watch.soon(keys[0])  # starts polling: its first round looks at every open session
        for _ in range(3):
            await asyncio.sleep(0)
        assert set(watch._seen) == set(keys)
        watch._seen.clear()
        watch.soon(keys[3])
        for _ in range(3):
            await asyncio.sleep(0)
        assert set(watch._seen) == {keys[3]}
    finally:
        await watch.aclose()

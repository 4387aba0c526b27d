"""Crash-safety soak: SIGKILL the real daemon at random moments.

    python -m tests.soak.crash_kill --kills 200 --seed 1 [--workdir DIR]

Each cycle starts ``python -m pi_sessiond serve`` (stdio, LSP framing, offline
summarizer, ``keepRecentTokens`` 2000), opens every session file, runs a random
workload of ``pi/append`` (user, assistant, toolResult; sometimes a usage big
enough to start an auto-compaction), ``pi/compact`` and ``pi/navigateTree``
(``summarize: true``, a label), and SIGKILLs the daemon 0–300 ms after sending
one of the requests (often 0–10 ms, to land inside a write, a rename or a
summary). An entry is *acknowledged* when its reply was received, before or
after the kill. Between cycles the v1 file is sometimes restored, and Pi's own
crash is simulated by appending half a line to a v3 file (a torn tail).

Invariants checked after every kill, on every file, with ``Session.open`` and
with a plain line-by-line JSON parse:

* the file loads; every acknowledged entry is there with the same id and content;
* every line is a whole JSON object, except a torn last line (reported by the
  loader as a warning), the torn tails we injected ourselves, and torn tails a
  kill left (a short write), which later writes close with a newline;
* ids are unique and every ``parentId`` names an earlier entry;
* the file never shrinks: the bytes seen after the previous kill are a prefix
  (a torn tail is repaired by appending ``\\n``, never by truncating);
* the v1 file is the untouched original or a complete v3 file holding every
  migrated original entry;
* no temporary file is left in the directory and every ``<file>.lock`` is free.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pi_sessiond.cli.rpcclient import RpcClient, RpcError
from pi_sessiond.examples import generator
from pi_sessiond.store.session import Session

Json = dict[str, Any]
# liveWriterSeconds 0: a daemon killed between its write and its lock-file mark, and the injected torn
# tails, look like another program's appends to the next daemon; the guard has its own tests and soak
# (tests/e2e/test_live_writers.py, tests/soak/live_soak.py), this soak is about durability.
SETTINGS: Json = {"compaction": {"keepRecentTokens": 2000}, "daemon": {"liveWriterSeconds": 0}}
EXPECTED_ERRORS = {"nothingToCompact", "notShrinking", "conflict", "busy", "summarizerFailed"}  # refusals, not crashes
STRIPPED = ("id", "parentId", "timestamp")  # assigned by the store, not sent by us
WORDS = ("the", "parser", "cache", "retry", "token", "branch", "commit", "schema", "invoice", "lock", "fsync")
HANG_SECONDS = 60.0


def digest(obj: Any) -> str:
    """A content hash independent of key order."""
    return hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()[:16]


@dataclass
class Tracked:
    """One session file and what the daemon promised about it."""

    path: Path
    original: bytes | None = None  # the v1 file's pristine bytes
    snapshot: bytes = b""  # the file as checked after the previous kill
    acked: dict[str, tuple[bool, str]] = field(default_factory=dict)  # id -> (strip assigned keys?, digest)
    labels: set[tuple[str, str]] = field(default_factory=set)  # (targetId, label) acknowledged
    injected: dict[int, int] = field(default_factory=dict)  # torn tails we wrote: byte offset -> length
    repaired: set[int] = field(default_factory=set)  # offsets of injected torn tails that got their newline
    ids: list[str] = field(default_factory=list)  # entries the daemon knows: navigation targets
    session_id: str = ""
    leaf: str | None = None


@dataclass
class Stats:
    kills: int = 0
    acked_checked: int = 0
    acked_total: int = 0
    in_flight_at_kill: Counter[str] = field(default_factory=Counter)
    errors: Counter[str] = field(default_factory=Counter)
    torn_injected: int = 0
    torn_repaired: int = 0
    torn_natural: int = 0
    v1_rewrites: int = 0
    violations: list[str] = field(default_factory=list)
    leftovers: set[str] = field(default_factory=set)  # leftover files already reported


# --------------------------------------------------------------------------- workload


def _text(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def _assistant(rng: random.Random, *, big_usage: bool = False, tool: str | None = None) -> Json:
    content: list[Json] = [{"type": "text", "text": _text(rng, 5, 400)}]
    if tool is not None:
        content.append({"type": "toolCall", "id": tool, "name": "bash", "arguments": {"command": "make test"}})
    inp = 195_000 if big_usage else rng.randint(100, 5000)
    usage = {"input": inp, "output": 50, "cacheRead": 0, "cacheWrite": 0, "totalTokens": inp + 50,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    message = {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic",
               "model": "claude-sonnet-4-5", "usage": usage, "stopReason": "toolUse" if tool else "stop",
               "timestamp": 1_760_000_000_000}
    return {"type": "message", "message": message}


def _turn(rng: random.Random) -> list[Json]:
    """One to three entries as an agent loop appends them."""
    user = {"type": "message", "message": {"role": "user", "content": _text(rng, 3, 300), "timestamp": 1}}
    call_id = f"call_{rng.randrange(10**9)}"
    result = {"type": "message", "message": {
        "role": "toolResult", "toolCallId": call_id, "toolName": "bash",
        "content": [{"type": "text", "text": _text(rng, 1, 2000)}], "isError": rng.random() < 0.2, "timestamp": 3}}
    shape = rng.randrange(4)
    if shape == 0:
        return [user, _assistant(rng, big_usage=rng.random() < 0.15)]
    if shape == 1:
        return [_assistant(rng, tool=call_id), result]
    return [user] if shape == 2 else [_assistant(rng, big_usage=rng.random() < 0.15)]


def op_append(client: RpcClient, rng: random.Random, file: Tracked) -> None:
    rows = _turn(rng)
    reply = client.request("pi/append", {"sessionId": file.session_id, "entries": rows})
    for entry_id, row in zip(reply["ids"], rows, strict=True):
        file.acked[entry_id] = (True, digest(row))
        file.ids.append(entry_id)
    file.leaf = reply["leafId"]


def op_compact(client: RpcClient, rng: random.Random, file: Tracked) -> None:
    reply = client.request("pi/compact", {"sessionId": file.session_id})
    _ack_full(file, reply.get("entry"))


def op_navigate(client: RpcClient, rng: random.Random, file: Tracked) -> None:
    target, label = rng.choice(file.ids), f"soak-{rng.randrange(10**6)}"
    params = {"sessionId": file.session_id, "targetId": target, "summarize": True, "label": label}
    reply = client.request("pi/navigateTree", params)
    entry = reply.get("entry")
    _ack_full(file, entry)
    if target != file.leaf:  # navigating to the leaf itself writes nothing
        file.labels.add((entry["id"] if entry else target, label))
    file.leaf = reply.get("leafId")


def _ack_full(file: Tracked, entry: Json | None) -> None:
    if entry:
        file.acked[entry["id"]] = (False, digest(entry))
        file.ids.append(entry["id"])
        file.leaf = entry["id"]


OPS = ((op_append, 6), (op_compact, 2), (op_navigate, 2))


# --------------------------------------------------------------------------- one cycle


def start_daemon(workdir: Path, env: dict[str, str] | None = None) -> tuple[RpcClient, subprocess.Popen[bytes]]:
    """A daemon on stdio over ``workdir`` (``env`` adds variables, e.g. armed failpoints)."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(workdir / "agent"), **(env or {})}
    with open(workdir / "daemon.log", "ab") as log:
        cmd = [sys.executable, "-m", "pi_sessiond", "serve"]
        proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    client = RpcClient(proc.stdout, proc.stdin)
    options = {"sessionsDir": str(workdir / "sessions"), "settings": SETTINGS}
    client.request("initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": options})
    client.notify("initialized", {})
    return client, proc


def run_cycle(workdir: Path, files: list[Tracked], rng: random.Random, stats: Stats) -> None:
    """Start a daemon, run the workload, SIGKILL it; acknowledgements go into ``files``."""
    client, proc = start_daemon(workdir)
    watchdog = threading.Timer(HANG_SECONDS, proc.kill)
    watchdog.start()
    killer: threading.Thread | None = None
    fire_at, n, in_flight = rng.randrange(8), 0, "idle"
    try:
        for file in files:
            opened = client.request("pi/openSession", {"path": str(file.path)})
            file.session_id, file.leaf = opened["sessionId"], opened["leafId"]
        while True:
            op = rng.choices([o for o, _ in OPS], [w for _, w in OPS])[0]
            file = rng.choice(files)
            in_flight = f"{op.__name__}{'(v1)' if file.original is not None else ''}"
            if n == fire_at:
                killer = _killer(proc, file, rng)
                in_flight += " [temp-file trigger]" if not isinstance(killer, threading.Timer) else ""
                killer.start()
            _run_op(op, client, rng, file, stats)
            in_flight, n = "idle", n + 1
    except (EOFError, OSError, orjson.JSONDecodeError):
        pass  # the daemon is gone (a reply cut short fails to parse)
    finally:
        watchdog.cancel()
        if killer is not None:
            killer.join()
        proc.kill()
        proc.wait()
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError):
                stream.close()  # type: ignore[union-attr]
    if killer is None:
        stats.violations.append(f"cycle {stats.kills}: the daemon died or hung before the planned kill")
    stats.in_flight_at_kill[in_flight] += 1


def _killer(proc: subprocess.Popen[bytes], file: Tracked, rng: random.Random) -> threading.Thread:
    """SIGKILL after 0–300 ms (often 0–10 ms); for a write to the pristine v1 file, often the moment
    its rewrite's temporary file appears (the 1–3 ms window a timer rarely hits)."""
    if file.snapshot == file.original and rng.random() < 0.5:
        return threading.Thread(target=kill_when_temp_appears, args=(proc, file.path))
    delay = rng.uniform(0, 0.01) if rng.random() < 0.3 else rng.uniform(0, 0.3)
    return threading.Timer(delay, proc.kill)


def kill_when_temp_appears(proc: subprocess.Popen[bytes], path: Path, timeout: float = 1.0) -> None:
    """SIGKILL ``proc`` as soon as a ``.<name>.*.tmp`` of ``path`` exists (or after ``timeout``).

    A random kill point for the soak; a test that needs the kill to land inside the
    rewrite arms the ``rewrite.before-rename`` failpoint instead (:func:`kill_at_failpoint`).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not any(path.parent.glob(f".{path.name}*.tmp")):
        pass
    proc.kill()


def kill_at_failpoint(proc: subprocess.Popen[bytes], marker: Path, timeout: float = 120.0) -> str:
    """Wait until the daemon's armed failpoint wrote ``marker``, then SIGKILL it; the point's name.

    Raises ``TimeoutError`` (after killing) when the point is not reached in ``timeout`` seconds
    or the daemon exits first.
    """
    deadline = time.monotonic() + timeout
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise TimeoutError(f"the failpoint was not reached (daemon exit code {proc.poll()})")
        time.sleep(0.01)
    proc.kill()
    return marker.read_text()


def _run_op(op: Any, client: RpcClient, rng: random.Random, file: Tracked, stats: Stats) -> None:
    try:
        op(client, rng, file)
    except RpcError as exc:
        reason = str((exc.error.get("data") or {}).get("reason", exc.error.get("code")))
        stats.errors[reason] += 1
        if reason not in EXPECTED_ERRORS:
            stats.violations.append(f"cycle {stats.kills}: {op.__name__} on {file.path.name}: {reason}: {exc}")


# --------------------------------------------------------------------------- checks


@dataclass
class Parsed:
    header: Json | None
    entries: dict[str, Json]
    torn_tail: bytes  # the bytes after the last newline


def plain_parse(data: bytes, file: Tracked, where: str, out: list[str]) -> Parsed:
    """Line by line with the JSON parser alone; problems go to ``out``."""
    header, entries, pos = None, {}, 0
    end = data.rfind(b"\n") + 1
    while pos < end:
        stop = data.index(b"\n", pos)
        line, start, pos = data[pos:stop], pos, stop + 1
        if start in file.injected:
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            out.append(f"{where}: half or malformed line at byte {start}: {line[:80]!r}")
            continue
        if header is None:
            header = obj if obj.get("type") == "session" else None
            if header is None:
                out.append(f"{where}: the first line is not a session header")
            continue
        entry_id, parent = obj.get("id"), obj.get("parentId")
        if entry_id in entries:
            out.append(f"{where}: duplicate entry id {entry_id}")
        if parent is not None and parent not in entries:
            out.append(f"{where}: entry {entry_id} has parentId {parent} that is not an earlier entry")
        entries[entry_id] = obj
    return Parsed(header, entries, data[end:])


def check_file(file: Tracked, v1_migrated: dict[str, str], stats: Stats, where: str) -> list[str]:
    out: list[str] = []
    data = file.path.read_bytes()
    if file.original is not None and data == file.original:
        file.snapshot = data
        return out  # the v1 file untouched
    rewritten = file.original is not None and file.snapshot == file.original  # the one-time v1 -> v3 rewrite
    if not rewritten and not data.startswith(file.snapshot):
        out.append(f"{where}: the file shrank or changed ({len(file.snapshot)} -> {len(data)} bytes)")
    parsed = plain_parse(data, file, where, out)
    if file.original is not None:
        _check_v1_rewrite(parsed, v1_migrated, where, out)
    _check_torn_tails(file, data, stats, where, out)
    offset = len(data) - len(parsed.torn_tail)
    if parsed.torn_tail and offset not in file.injected:
        # A kill inside a write (a short write of a multi-line append): from now on it
        # is a torn tail like an injected one — closed by a newline, never truncated.
        stats.torn_natural += 1
        file.injected[offset] = len(parsed.torn_tail)
    _check_loader(file, data, parsed, where, out)
    for entry_id, (strip, want) in file.acked.items():
        entry = parsed.entries.get(entry_id)
        if entry is None:
            out.append(f"{where}: acknowledged entry {entry_id} is missing")
        elif digest({k: v for k, v in entry.items() if k not in STRIPPED} if strip else entry) != want:
            out.append(f"{where}: acknowledged entry {entry_id} has different content on disk")
    found = {(e.get("targetId"), e.get("label")) for e in parsed.entries.values() if e.get("type") == "label"}
    out.extend(f"{where}: acknowledged label {lab} on {tid} is missing" for tid, lab in file.labels - found)
    stats.acked_checked += len(file.acked)
    file.snapshot, file.ids = data, list(parsed.entries)
    return out


def _check_torn_tails(file: Tracked, data: bytes, stats: Stats, where: str, out: list[str]) -> None:
    """A torn tail is repaired by one newline right after it, the next time the file is written."""
    for offset, length in file.injected.items():
        if offset in file.repaired or len(data) <= offset + length:
            continue
        if data[offset + length] != 0x0A:
            out.append(f"{where}: the torn tail at byte {offset} was not closed by a newline")
        file.repaired.add(offset)
        stats.torn_repaired += 1


def _check_loader(file: Tracked, data: bytes, parsed: Parsed, where: str, out: list[str]) -> None:
    try:
        session = Session.open(file.path)
    except Exception as exc:
        out.append(f"{where}: Session.open failed: {exc!r}")
        return
    last_line = data.count(b"\n") + 1
    for warning in session.warnings:
        torn_last = warning.line == last_line and "torn last line" in warning.message and parsed.torn_tail
        if not torn_last and "malformed" not in warning.message:
            out.append(f"{where}: loader warning at line {warning.line}: {warning.message}")
    malformed = sum("malformed" in w.message for w in session.warnings)
    if malformed != len(file.repaired):
        out.append(f"{where}: the loader skipped {malformed} malformed lines; we injected {len(file.repaired)}")
    if {e.id for e in session.entries} != set(parsed.entries):
        out.append(f"{where}: the loader and the plain parse disagree on the entries")


def _check_v1_rewrite(parsed: Parsed, v1_migrated: dict[str, str], where: str, out: list[str]) -> None:
    if not parsed.header or parsed.header.get("version") != 3:
        out.append(f"{where}: the v1 file is neither the original nor a v3 file")
    for entry_id, want in v1_migrated.items():
        entry = parsed.entries.get(entry_id)
        if entry is None or digest(entry) != want:
            out.append(f"{where}: migrated original entry {entry_id} is missing or changed")
            return


def check_directory(
    workdir: Path, files: list[Tracked], where: str, seen: set[str] | None = None, *, final: bool = False
) -> list[str]:
    """Leftover files (each reported once when ``seen`` is given) and locks still held.

    Right after a kill, a rewrite's staging file ``.<name>.tmp`` may exist (a killed
    process cannot clean up); the next writer removes it, so only the final check
    (after a fresh daemon wrote every file) treats it as a leftover.
    """
    out: list[str] = []
    expected = {f.path.name for f in files} | {f.path.name + ".lock" for f in files} | (seen if seen else set())
    if not final:
        expected |= {f".{f.path.name}.tmp" for f in files}
    for path in (workdir / "sessions").iterdir():
        if path.name not in expected:
            out.append(f"{where}: leftover file {path.name} ({path.stat().st_size} bytes)")
            if seen is not None:
                seen.add(path.name)
    for file in files:
        lock = file.path.with_name(file.path.name + ".lock")
        if not lock.exists():
            continue
        with open(lock, "a+b") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                out.append(f"{where}: {lock.name} is still locked after the kill")
            else:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return out


# --------------------------------------------------------------------------- the run


def setup(workdir: Path, seed: int) -> tuple[list[Tracked], dict[str, str]]:
    """Two generated v3 sessions and one v1 session in ``workdir/sessions``; the v1 file's migrated entries."""
    sessions = workdir / "sessions"
    if sessions.exists() and any(sessions.iterdir()):
        raise SystemExit(f"{sessions} is not empty; give an empty --workdir")
    sessions.mkdir(parents=True, exist_ok=True)
    (workdir / "agent").mkdir(exist_ok=True)  # an empty PI_CODING_AGENT_DIR: no user settings leak in
    shapes = {"long-a.jsonl": ("long", 3), "long-b.jsonl": ("long", 3), "v1.jsonl": ("linear", 1)}
    files = []
    for n, (name, (shape, version)) in enumerate(shapes.items()):
        path = sessions / name
        generator.write(path, generator.generate(seed=seed * 10 + n, entries=300, shape=shape, version=version))
        files.append(Tracked(path, snapshot=path.read_bytes()))
    v1 = files[-1]
    v1.original = v1.snapshot
    migrated = {e.id: digest(e.data) for e in Session.open(v1.path).entries}
    for file in files:
        file.ids = list(migrated) if file is v1 else list(plain_parse(file.snapshot, file, "setup", []).entries)
    return files, migrated


def perturb(files: list[Tracked], migrated: dict[str, str], rng: random.Random, stats: Stats) -> None:
    """Between kills: sometimes restore the v1 file, sometimes crash "Pi" in the middle of a line."""
    v1 = next(f for f in files if f.original is not None)
    if v1.snapshot != v1.original and rng.random() < 0.3:
        stats.acked_total += len(v1.acked)
        v1.path.write_bytes(v1.original)
        v1.snapshot, v1.acked, v1.labels, v1.ids = v1.original, {}, set(), list(migrated)
        v1.injected, v1.repaired = {}, set()
    candidates = [f for f in files if f.snapshot != f.original and f.snapshot.endswith(b"\n")]
    if not candidates or rng.random() >= 0.15:
        return
    file = rng.choice(candidates)
    line = orjson.dumps({"type": "message", "id": f"{rng.randrange(16**8):08x}", "parentId": file.ids[-1],
                         "timestamp": "2026-01-01T00:00:00.000Z", **_assistant(rng)})
    torn = line[: rng.randint(1, len(line) - 2)]
    with open(file.path, "ab") as fh:
        fh.write(torn)
    file.injected[len(file.snapshot)] = len(torn)
    file.snapshot += torn
    stats.torn_injected += 1


def check_all(
    workdir: Path, files: list[Tracked], migrated: dict[str, str], stats: Stats, *, final: bool = False
) -> None:
    where = "after the final write" if final else f"kill {stats.kills}"
    for file in files:
        if file.original is not None and file.snapshot == file.original and file.path.read_bytes() != file.original:
            stats.v1_rewrites += 1
        found = check_file(file, migrated if file.original is not None else {}, stats, f"{where} {file.path.name}")
        stats.violations.extend(found)
    stats.violations.extend(check_directory(workdir, files, where, stats.leftovers, final=final))


def final_write(workdir: Path, files: list[Tracked], rng: random.Random, stats: Stats) -> None:
    """After the last kill a new daemon can open and write every file (no stale lock)."""
    client, proc = start_daemon(workdir)
    try:
        for file in files:
            opened = client.request("pi/openSession", {"path": str(file.path)})
            file.session_id, file.leaf = opened["sessionId"], opened["leafId"]
            op_append(client, rng, file)
    except RpcError as exc:
        stats.violations.append(f"after the last kill a new daemon could not write: {exc.error}")
    finally:
        proc.kill()
        proc.wait()


def run(kills: int, seed: int, workdir: Path) -> tuple[Stats, float]:
    """The whole soak; returns the counts and the wall-clock seconds."""
    started = time.monotonic()
    rng, stats = random.Random(seed), Stats()
    files, migrated = setup(workdir, seed)
    while stats.kills < kills:
        perturb(files, migrated, rng, stats)
        run_cycle(workdir, files, rng, stats)
        stats.kills += 1
        check_all(workdir, files, migrated, stats)
    final_write(workdir, files, rng, stats)
    check_all(workdir, files, migrated, stats, final=True)
    stats.acked_total += sum(len(f.acked) for f in files)
    return stats, time.monotonic() - started


def report(stats: Stats, seconds: float, command: str) -> str:
    flight = ", ".join(f"{k} {v}" for k, v in stats.in_flight_at_kill.most_common())
    refused = ", ".join(f"{k} {v}" for k, v in stats.errors.most_common()) or "none"
    lines = [
        f"$ {command}",
        f"kills                 {stats.kills} (request in flight: {flight})",
        f"acknowledged entries  {stats.acked_total} (checked {stats.acked_checked} times in all)",
        f"violations            {len(stats.violations)}",
        f"torn tails            {stats.torn_injected} injected, {stats.torn_repaired} repaired with a newline, "
        f"{stats.torn_natural} seen from kills",
        f"v1 -> v3 rewrites     {stats.v1_rewrites}",
        f"refused requests      {refused}",
        f"total time            {seconds:.1f} s",
    ]
    lines.extend(f"VIOLATION {v}" for v in stats.violations[:50])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak.crash_kill", description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workdir", type=Path, help="an empty or new folder (default: a temporary one)")
    args = parser.parse_args(argv)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="pi-crash-soak-"))
    stats, seconds = run(args.kills, args.seed, workdir)
    print(report(stats, seconds, f"python -m tests.soak.crash_kill --kills {args.kills} --seed {args.seed}"))
    if stats.violations:
        print(f"files kept in {workdir}")
        return 1
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

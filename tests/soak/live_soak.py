"""Live-writer soak: a Pi-style writer appends while the daemon appends and compacts.

``python -m tests.soak.live_soak --rate 20 --seconds 60`` starts the real
daemon (stdio, summaries streamed from the loopback provider), opens a
generated 300-entry session and, while ``tests/soak/live_writer.py`` appends
a Pi-style entry ``rate`` times a second (parent = the file's last entry, no
lock) in its own process, sends ``pi/append`` turns and, every
``--compact-every`` seconds, ``pi/compact`` with ``force: true``.

Then, with the file loaded as Pi loads it (leaf = its last entry):
- missed: entries in the file that the daemon does not know (``pi/getEntries``
  since the root) — fold-in must never skip a line;
- orphaned: entries of either writer not on the path of Pi's leaf (a
  compaction or an append parented on a stale leaf leaves turns on a side
  branch);
- compactions off the live branch: compaction entries not on that path.
Exit 1 unless all three are 0.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.loopback_provider import Fault, LoopbackProvider

from pi_sessiond.cli.rpcclient import RpcClient, RpcError
from pi_sessiond.examples import generator
from pi_sessiond.store.session import Session

LOOPBACK_KEY = "sk-live-soak"
# One answer for every request: the headings of a history summary and of a turn prefix (both are checked
# for presence only), so repeated and split-turn compactions all validate.
SOAK_REPLY = (
    "## Goal\n- Keep working beside Pi\n\n## Constraints & Preferences\n- (none)\n\n"
    "## Progress\n### Done\n- [x] Earlier turns\n\n### In Progress\n- [ ] The current turn\n\n"
    "### Blocked\n- (none)\n\n## Key Decisions\n- **Soak**: fixed answer\n\n"
    "## Next Steps\n1. Go on\n\n## Critical Context\n- (none)\n\n"
    "## Original Request\n- The turn in progress\n\n## Progress So Far\n- Some steps\n\n"
    "## Context Needed to Continue\n- (none)\n"
)


@dataclass
class Outcome:
    """What one run saw."""

    writer_ids: list[str] = field(default_factory=list)
    our_ids: list[str] = field(default_factory=list)
    compactions: list[str] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    refusal_messages: dict[str, str] = field(default_factory=dict)
    missed: list[str] = field(default_factory=list)
    writer_raced: set[str] = field(default_factory=set)
    orphaned: list[str] = field(default_factory=list)
    orphaned_by_writer_race: list[str] = field(default_factory=list)
    off_branch: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.missed or self.orphaned or self.off_branch) and bool(self.writer_ids)


def start_daemon(workdir: Path, base_url: str) -> tuple[RpcClient, subprocess.Popen[bytes]]:
    """The real daemon on stdio, summarizing through the loopback provider."""
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(workdir / "agent"), "LOOPBACK_KEY": LOOPBACK_KEY}
    with open(workdir / "daemon.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "serve"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=log, env=env)
    assert proc.stdin is not None and proc.stdout is not None
    client = RpcClient(proc.stdout, proc.stdin)
    settings = {"summarizer": {"provider": "openai", "baseUrl": base_url + "/v1", "model": "loopback",
                               "apiKeyEnv": "LOOPBACK_KEY"},
                "compaction": {"keepRecentTokens": 2000}, "retry": {"baseDelayMs": 1}}
    options = {"sessionsDir": str(workdir / "sessions"), "settings": settings}
    client.request("initialize", {"processId": os.getpid(), "capabilities": {}, "initializationOptions": options})
    client.notify("initialized", {})
    return client, proc


def our_turn(n: int) -> list[dict[str, Any]]:
    """One turn appended through the daemon."""
    usage = {"input": 300, "output": 40, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 340,
             "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
    stamp = int(time.time() * 1000)
    return [
        {"type": "message", "message": {"role": "user", "content": f"[editor] question {n}", "timestamp": stamp}},
        {"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}],
                                        "api": "openai-completions", "provider": "loopback", "model": "loopback",
                                        "usage": usage, "stopReason": "stop", "timestamp": stamp}},
    ]


def drive(client: RpcClient, sid: str, writer: subprocess.Popen[bytes], compact_every: float, out: Outcome) -> None:
    """Append and compact (``force: true``) until the writer is done."""
    next_compact = time.monotonic() + compact_every / 2
    n = 0
    while writer.poll() is None:
        reply = client.request("pi/append", {"sessionId": sid, "entries": our_turn(n)})
        out.our_ids.extend(reply["ids"])
        n += 1
        if time.monotonic() >= next_compact:
            next_compact = time.monotonic() + compact_every
            try:
                result = client.request("pi/compact", {"sessionId": sid, "force": True})
                out.compactions.append(result["entry"]["id"])
            except RpcError as exc:
                data = exc.error.get("data")
                reason = str(data.get("reason") if isinstance(data, dict) else exc.error.get("code"))
                out.refusals[reason] += 1
                out.refusal_messages.setdefault(reason, str(exc.error.get("message", ""))[:300])
        time.sleep(0.15)


def check(client: RpcClient, sid: str, path: Path, out: Outcome) -> None:
    """Fill ``missed``, ``orphaned`` and ``off_branch`` (see the module docstring)."""
    known = {e["id"] for e in client.request("pi/getEntries", {"sessionId": sid, "since": "root"})["entries"]}
    classify(path, known, out)


def classify(path: Path, known: set[str], out: Outcome) -> None:
    """The checks of :func:`check` against the file as Pi loads it; ``known``: the daemon's entry ids.

    An orphaned turn is put down to the other writer when the side branch it
    is on starts with an entry that writer wrote after a stale read of the
    file's last entry (``writer_raced``): that fork is the writer's own.
    """
    pi_view = Session.open(path)
    on_disk = [e.id for e in pi_view.entries]
    out.missed = [eid for eid in on_disk if eid not in known]
    live = {e.id for e in pi_view.path_to()}
    ours = set(out.our_ids) | set(out.writer_ids)
    orphaned = [eid for eid in on_disk if eid in ours and eid not in live]
    by_writer = {eid for eid in orphaned if branch_root(pi_view, eid, live) in out.writer_raced}
    out.orphaned = [eid for eid in orphaned if eid not in by_writer]
    out.orphaned_by_writer_race = [eid for eid in orphaned if eid in by_writer]
    out.off_branch = [eid for eid in out.compactions if eid not in live]


def branch_root(session: Session, entry_id: str, live: set[str]) -> str:
    """The first entry of the side branch ``entry_id`` is on (its ancestor whose parent is on the live path)."""
    root = entry_id
    for entry in session.tree.iter_up(entry_id):
        if entry.id in live:
            break
        root = entry.id
    return root


def run(rate: float, seconds: float, compact_every: float, workdir: Path) -> Outcome:
    """One soak run in ``workdir``."""
    out = Outcome()
    path = workdir / "live.jsonl"
    generator.write(path, generator.generate(seed=11, entries=300, shape="long"))
    ids_file = workdir / "writer-ids.txt"
    started = time.monotonic()
    with LoopbackProvider() as loopback:
        loopback.set_default(Fault("ok", chunk_delay=0.01, reply=SOAK_REPLY))
        client, daemon = start_daemon(workdir, loopback.base_url)
        try:
            sid = client.request("pi/openSession", {"path": str(path)})["sessionId"]
            writer = subprocess.Popen([sys.executable, "-m", "tests.soak.live_writer", str(path), "--rate", str(rate),
                                       "--seconds", str(seconds), "--ids", str(ids_file)])
            try:
                drive(client, sid, writer, compact_every, out)
            finally:
                writer.wait(timeout=seconds + 60)
            rows = [row.split() for row in ids_file.read_text().splitlines() if row.strip()]
            out.writer_ids = [eid for eid, _ in rows]
            out.writer_raced = {eid for eid, raced in rows if raced == "1"}
            check(client, sid, path, out)
        finally:
            daemon.kill()
            daemon.wait(timeout=30)
    out.seconds = time.monotonic() - started
    return out


def report(out: Outcome, command: str) -> str:
    refused = ", ".join(f"{k} {v}" for k, v in sorted(out.refusals.items())) or "none"
    return "\n".join([
        f"$ {command}",
        f"writer entries        {len(out.writer_ids)} (Pi-style, no lock)",
        f"daemon entries        {len(out.our_ids)} appended, {len(out.compactions)} compactions (force: true)",
        f"compactions refused   {refused}",
        *(f"  {reason}: {text}" for reason, text in sorted(out.refusal_messages.items())),
        f"missed by fold-in     {len(out.missed)} {out.missed[:5]}",
        f"orphaned turns        {len(out.orphaned)} {out.orphaned[:5]}",
        f"  forks of the writer's own race (it read the last entry before our line landed): "
        f"{len(out.writer_raced)}, leaving {len(out.orphaned_by_writer_race)} of its turns on side branches",
        f"compactions off the live branch  {len(out.off_branch)}",
        f"total time            {out.seconds:.1f} s",
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rate", type=float, default=20.0, help="writer entries per second")
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--compact-every", type=float, default=3.0, help="seconds between compactions")
    parser.add_argument("--workdir", type=Path, default=None)
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="live-soak-"))
    workdir.mkdir(parents=True, exist_ok=True)
    out = run(args.rate, args.seconds, args.compact_every, workdir)
    print(report(out, " ".join(["python -m tests.soak.live_soak", *sys.argv[1:]])))
    if not out.ok:
        print(f"FAILED; files kept in {workdir}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

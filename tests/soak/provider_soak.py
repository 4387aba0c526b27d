"""Provider fault soak: summaries through a misbehaving loopback provider.

``python -m tests.soak.provider_soak --jobs N [--concurrency K] [--seed S]``
starts ONE daemon (``--log-file``, ``--log-level debug``, the key in
``SOAK_KEY``) whose summarizer is the loopback provider of
``tests/loopback_provider.py`` — OpenAI format by default, Anthropic for every
other session (``pi/updateSettings`` per session) — opens many generated
sessions and runs N jobs, K at a time on distinct sessions: ``pi/compact`` and
``pi/navigateTree`` with ``summarize``, each preceded by scripted faults
(timeouts by delay and stall, 429 with ``Retry-After``, 500/503, resets,
malformed and truncated SSE, empty and tool-only answers, context length) and
some cancelled at a random moment (``$/cancelRequest`` or
``window/workDoneProgress/cancel``).

Checked:

* per job: a success appended exactly its one entry (a complete, well-formed
  ``compaction`` or ``branch_summary`` line with the id of the result), a
  failure or cancellation left the file byte for byte as it was; every error is
  a clear JSON-RPC error (``-32005`` with ``data.status`` and a message,
  ``-32013`` for a tool-only answer, ``-32800`` only for a job we cancelled,
  or another of :data:`CLEAR_CODES`);
* at the end: every session file parses line by line; the daemon's RSS,
  sampled every 100 jobs, grew less than 20 %; its open fds and asyncio tasks
  are back where they were before the first job (its summary worker processes
  started: their pipes stay open from the first summary on); the secret is in no log line, reply,
  notification or session file.

Exit code 0 when everything held; the figures are printed either way.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.loopback_provider import Fault, LoopbackProvider
from tests.soak.wire_fuzz import WireDaemon, initialize, make_sessions, open_session

SECRET = "sk-soak-SECRET-1234567890"
SECRET_PIECES = (SECRET, "SECRET-1234567890", "sk-soak-SECRET")
JOB_TIMEOUT = 60.0
IDLE_CONNECTIONS = 4  # keep-alive connections an idle client may hold (two providers, two summarizer clients)
CLEAR_CODES = {-32005, -32004, -32006, -32007, -32002, -32012, -32013}
# -32012 notShrinking: a session compacted again and again until a summary no longer frees anything
# (weight, faults scripted before the job; four copies outlast the 3 retries of retry.maxRetries)
FAULT_MIX: list[tuple[int, list[Fault]]] = [
    (12, []),
    (4, [Fault("delay", delay=0.3)]),
    (4, [Fault("delay", delay=3)] * 4),
    (4, [Fault("stall")] * 4),
    (4, [Fault("429", retry_after=0.1)] * 4),
    (4, [Fault("429", retry_after=0.1)]),
    (4, [Fault("500")] * 4),
    (4, [Fault("503")] * 4),
    (4, [Fault("reset")] * 4),
    (4, [Fault("reset_mid_stream")] * 4),
    (4, [Fault("malformed")] * 4),
    (3, [Fault("truncated")] * 4),
    (3, [Fault("empty")] * 4),
    (2, [Fault("tool_only")] * 4),
    (3, [Fault("context_length")]),
    (4, [Fault("ok", chunk_delay=0.05)]),
]


def summarizer_settings(base_url: str, provider: str = "openai") -> dict[str, Any]:
    url = base_url + "/v1" if provider == "openai" else base_url
    return {"provider": provider, "baseUrl": url, "model": "m", "apiKeyEnv": "SOAK_KEY", "timeoutSeconds": 2}


@dataclass
class Job:
    number: int
    session: str
    method: str
    params: dict[str, Any]
    faults: list[str]
    cancel: str | None = None  # "request" or "progress"
    cancel_after: float = 0.0


@dataclass
class SoakReport:
    """The figures of one soak; ``problems`` lists every broken invariant."""

    jobs: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    provider_modes: Counter[str] = field(default_factory=Counter)  # what the provider served
    scripted_modes: Counter[str] = field(default_factory=Counter)  # what the jobs scripted (seed-determined)
    rss_kib: list[tuple[int, int]] = field(default_factory=list)
    fd_series: list[tuple[int, int]] = field(default_factory=list)
    fd_kinds: Counter[str] = field(default_factory=Counter)
    fds: tuple[int, int] = (0, 0)
    tasks: tuple[int, int] = (0, 0)
    secret_hits: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def rss_growth(self) -> float:
        base = self.rss_kib[1][1] if len(self.rss_kib) > 2 else self.rss_kib[0][1]
        return self.rss_kib[-1][1] / base - 1

    @property
    def clean(self) -> bool:
        return not self.problems and not self.secret_hits

    def summary(self) -> dict[str, Any]:
        return {"jobs": self.jobs, "seconds": round(self.seconds, 1), "outcomes": dict(self.outcomes),
                "providerModes": dict(self.provider_modes), "scriptedModes": dict(self.scripted_modes),
                "rssKiBEvery100Jobs": self.rss_kib,
                "rssGrowthPercent": round(100 * self.rss_growth, 1), "openFdsStartEndWithoutLocks": self.fds,
                "openFdsEvery100Jobs": self.fd_series, "fdKindsAtEnd": dict(self.fd_kinds),
                "asyncioTasksStartEnd": self.tasks, "secretHits": self.secret_hits,
                "problems": self.problems[:30], "problemCount": len(self.problems)}


class Soak:
    """The daemon, the provider, the sessions and the per-job checks."""

    def __init__(self, workdir: Path, provider: LoopbackProvider, sessions: int, seed: int) -> None:
        self.workdir, self.provider, self.seed, self.rng = workdir, provider, seed, random.Random(seed)
        self.report = SoakReport()
        self.log_file = workdir / "daemon.log"
        self.messages: list[str] = []  # every reply and notification the client received, as JSON text
        self.daemon = WireDaemon(["--log-file", str(self.log_file), "--log-level", "debug"], workdir / "stderr.log",
                                 env={"SOAK_KEY": SECRET, "PI_SESSIOND_DEBUG_METHODS": "1"},
                                 on_message=lambda m: self.messages.append(json.dumps(m)))
        settings = {"summarizer": summarizer_settings(provider.base_url), "compaction": {"keepRecentTokens": 400},
                    "daemon": {"maxConcurrentSummaries": 16}, "retry": {"baseDelayMs": 100}}
        initialize(self.daemon, workdir / "sessions", settings)
        self.paths = dict[str, Path]()
        for i, path in enumerate(make_sessions(workdir, sessions, entries=80)):
            sid = open_session(self.daemon, path)["sessionId"]
            self.paths[sid] = path
            if i % 2:
                self._call("pi/updateSettings", {"sessionId": sid, "settings": {
                    "summarizer": summarizer_settings(provider.base_url, "anthropic")}})
        self.free: queue.Queue[str] = queue.Queue()
        for sid in self.paths:
            self.free.put(sid)
        self.lock = threading.Lock()

    def _call(self, method: str, params: Any) -> Any:
        reply = self.daemon.call(method, params, timeout=30)
        self.messages.append(json.dumps(reply))
        if "result" not in reply:
            raise RuntimeError(f"{method} failed: {reply}")
        return reply["result"]

    def vitals(self) -> tuple[int, int]:
        """``(open fds other than session locks, asyncio tasks)`` of the daemon."""
        kinds = fd_kinds(self.daemon.pid)
        return sum(kinds.values()) - kinds["lock"], self._call("debug/stats", {})["tasks"]

    # ------------------------------------------------------------- jobs

    def make_job(self, number: int, sid: str) -> Job:
        """Job ``number``'s faults and cancellation come from its own seed-derived generator, so they do
        not depend on which session was free (timing); the target entry does."""
        weights = [w for w, _ in FAULT_MIX]
        own = random.Random(f"{self.seed}:{number}")
        faults = own.choices([f for _, f in FAULT_MIX], weights)[0]
        self.report.scripted_modes.update(f.mode for f in faults)
        token = f"progress-{number}"
        if self.rng.random() < 0.5:
            method, params = "pi/compact", {"sessionId": sid, "workDoneToken": token}
        else:
            nodes = self._call("pi/getTree", {"sessionId": sid})["nodes"]
            target = self.rng.choice([n["id"] for n in nodes if n["type"] != "session"] or [nodes[0]["id"]])
            method = "pi/navigateTree"
            params = {"sessionId": sid, "targetId": target, "summarize": True, "workDoneToken": token}
        job = Job(number, sid, method, params, [f.mode for f in faults])
        if own.random() < 0.15:
            job.cancel = own.choice(["request", "request", "progress"])
            job.cancel_after = own.uniform(0, 1.5)
        self.provider.script(*faults)
        return job

    def run_job(self, job: Job) -> None:
        path = self.paths[job.session]
        before = path.read_bytes()
        msg_id = self.daemon.next_id(f"job{job.number}")
        self.daemon.send({"jsonrpc": "2.0", "id": msg_id, "method": job.method, "params": job.params})
        timer = None
        if job.cancel is not None:
            timer = threading.Timer(job.cancel_after, self._cancel, (job, msg_id))
            timer.start()
        try:
            reply = self.daemon.wait(msg_id, JOB_TIMEOUT)
        except (TimeoutError, EOFError) as exc:
            self.problem(job, f"no reply: {exc}")
            return
        finally:
            if timer is not None:
                timer.cancel()
        self.messages.append(json.dumps(reply))
        self.check(job, reply, before, path.read_bytes())

    def _cancel(self, job: Job, msg_id: str) -> None:
        if job.cancel == "request":
            self.daemon.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": msg_id}})
        else:
            token = job.params["workDoneToken"]
            self.daemon.send({"jsonrpc": "2.0", "method": "window/workDoneProgress/cancel", "params": {"token": token}})

    def check(self, job: Job, reply: dict[str, Any], before: bytes, after: bytes) -> None:
        """The per-job invariants (module docstring)."""
        kind = "compact" if job.method == "pi/compact" else "navigate"
        if "result" in reply:
            with self.lock:
                self.report.outcomes[f"{kind}:ok{'+cancel' if job.cancel else ''}"] += 1
            self._check_written(job, reply["result"], before, after)
            return
        error = reply.get("error") or {}
        code, data = error.get("code"), error.get("data") or {}
        with self.lock:
            self.report.outcomes[f"{kind}:{code}:{data.get('reason')}{'+cancel' if job.cancel else ''}"] += 1
        if after != before:
            self.problem(job, f"failed with {code} but the file changed by {len(after) - len(before)} bytes")
        if code == -32800 and job.cancel is None:
            self.problem(job, f"cancelled although nobody cancelled it: {error}")
        elif code == -32005 and ("status" not in data or not error.get("message")):
            self.problem(job, f"summarizerFailed without data.status or a message: {error}")
        elif code not in CLEAR_CODES | {-32800}:
            self.problem(job, f"unclear error: {error}")

    def _check_written(self, job: Job, result: dict[str, Any], before: bytes, after: bytes) -> None:
        entry = result.get("entry")
        if not after.startswith(before):
            self.problem(job, "the file was rewritten, not appended to")
            return
        lines = after[len(before):].splitlines()
        wanted = ("compaction" if job.method == "pi/compact" else "branch_summary") if entry else None
        if len(lines) != (1 if wanted else 0):
            self.problem(job, f"{len(lines)} lines appended for result entry {bool(entry)}")
            return
        if wanted:
            problem = malformed_summary_line(lines[0], wanted)
            if problem or json.loads(lines[0])["id"] != entry.get("id"):
                self.problem(job, problem or "the written entry is not the one in the result")

    def problem(self, job: Job, what: str) -> None:
        with self.lock:
            self.report.problems.append(f"job {job.number} {job.method} faults={job.faults} "
                                        f"cancel={job.cancel}@{job.cancel_after:.2f}: {what}")


def malformed_summary_line(line: bytes, kind: str) -> str | None:
    """Why ``line`` is not a complete ``compaction``/``branch_summary`` entry (``None`` when it is)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return f"not JSON: {line[:120]!r}"
    required = {"compaction": ("summary", "firstKeptEntryId", "tokensBefore"), "branch_summary": ("summary", "fromId")}
    missing = [k for k in ("type", "id", "parentId", "timestamp", *required[kind]) if k not in entry]
    if entry.get("type") != kind or missing:
        return f"{entry.get('type')} entry missing {missing}"
    if not isinstance(entry["summary"], str) or not entry["summary"].strip():
        return "empty summary"
    return None


# --------------------------------------------------------------------------- the run


def run_soak(jobs: int, workdir: Path, *, concurrency: int = 12, sessions: int = 24, seed_value: int = 0,
             sample_every: int = 100) -> SoakReport:
    """Run ``jobs`` summary jobs through the faulty provider; the :class:`SoakReport`."""
    started = time.monotonic()
    with LoopbackProvider() as provider:
        soak = Soak(workdir, provider, sessions, seed_value)
        soak._call("debug/workers", {})  # their pipes are the daemon's from the first summary on: not a leak
        start_vitals = soak.vitals()
        soak.report.rss_kib.append((0, soak.daemon.status("VmRSS")))
        numbers = iter(range(jobs))
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    number = next(numbers, None)
                    if number is None:
                        return
                    sid = soak.free.get()
                    job = soak.make_job(number, sid)
                try:
                    soak.run_job(job)
                finally:
                    soak.free.put(sid)
                    _sample(soak, sample_every)

        threads = [threading.Thread(target=worker) for _ in range(concurrency)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        finish(soak, start_vitals)
        soak.report.provider_modes.update(r.mode for r in provider.requests)
    soak.report.seconds = time.monotonic() - started
    return soak.report


def _sample(soak: Soak, every: int) -> None:
    with soak.lock:
        soak.report.jobs += 1
        if soak.report.jobs % every == 0:
            soak.report.rss_kib.append((soak.report.jobs, soak.daemon.status("VmRSS")))
            soak.report.fd_series.append((soak.report.jobs, soak.vitals()[0]))


def finish(soak: Soak, start_vitals: tuple[int, int]) -> None:
    """End-of-run checks: vitals, files, the secret; then a clean ``shutdown`` + ``exit``."""
    report = soak.report
    if report.rss_kib[-1][0] != report.jobs:
        report.rss_kib.append((report.jobs, soak.daemon.status("VmRSS")))
    end_vitals = _settled_vitals(soak, start_vitals)
    report.fds, report.tasks = (start_vitals[0], end_vitals[0]), (start_vitals[1], end_vitals[1])
    report.fd_kinds = fd_kinds(soak.daemon.pid)
    if end_vitals[0] > start_vitals[0] + IDLE_CONNECTIONS or end_vitals[1] > start_vitals[1]:
        report.problems.append(f"leak: fds/tasks {start_vitals} at start, {end_vitals} at the end")
    if report.fd_kinds["lock"] > len(soak.paths):
        report.problems.append(f"{report.fd_kinds['lock']} lock fds for {len(soak.paths)} sessions")
    if report.rss_growth > 0.2:
        report.problems.append(f"RSS grew {100 * report.rss_growth:.0f}% across the jobs: {report.rss_kib}")
    for path in soak.paths.values():
        report.problems.extend(f"{path.name}: {p}" for p in file_problems(path))
    code = soak.daemon.shutdown()
    soak.daemon.stop()
    if code != 0:
        report.problems.append(f"the daemon exited {code} after shutdown + exit")
    stderr = soak.daemon.stderr_path.read_text(errors="replace")
    if "Traceback" in stderr:
        report.problems.append(f"traceback on stderr: {stderr[stderr.index('Traceback'):][:400]!r}")
    sources = {"log file": soak.log_file.read_text(errors="replace"), "stderr": stderr,
               "replies and notifications": "\n".join(soak.messages)}
    sources |= {f"session file {p.name}": p.read_text(errors="replace") for p in soak.workdir.rglob("*.jsonl")}
    report.secret_hits = [f"{piece!r} in {name}" for name, text in sources.items() for piece in SECRET_PIECES
                          if piece in text]


def _settled_vitals(soak: Soak, start: tuple[int, int], timeout: float = 60.0) -> tuple[int, int]:
    """The vitals once idle connections had time to close: at once when back at the start,
    else the best reading within ``timeout`` (generous: a loaded machine closes them late)."""
    deadline = time.monotonic() + timeout
    best = soak.vitals()
    while (best[0] > start[0] or best[1] > start[1]) and time.monotonic() < deadline:
        time.sleep(0.25)
        best = min(best, soak.vitals())
    return best


def fd_kinds(pid: int) -> Counter[str]:
    """What the open fds of ``pid`` are: ``lock`` (a session's sidecar lock), ``socket``, ``pipe``, ``file``…"""
    kinds: Counter[str] = Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        kinds["lock" if target.endswith(".lock") else target.split(":", 1)[0] if ":" in target else "file"] += 1
    return kinds


def file_problems(path: Path) -> list[str]:
    """Lines of a session file that do not parse, and summary entries that are not complete."""
    problems = []
    for number, line in enumerate(path.read_bytes().splitlines(), 1):
        try:
            entry = json.loads(line)
        except ValueError:
            problems.append(f"line {number} is not JSON: {line[:80]!r}")
            continue
        kind = entry.get("type") if isinstance(entry, dict) else None
        if kind in ("compaction", "branch_summary") and (why := malformed_summary_line(line, kind)):
            problems.append(f"line {number}: {why}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak.provider_soak", description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=1000, help="how many summary jobs (default 1000)")
    parser.add_argument("--concurrency", type=int, default=12, help="jobs at a time (default 12)")
    parser.add_argument("--sessions", type=int, default=24, help="generated sessions (default 24)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", type=Path, default=None, help="keep the sessions and logs here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="provider-soak-") as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        report = run_soak(args.jobs, workdir, concurrency=args.concurrency, sessions=args.sessions,
                          seed_value=args.seed)
    print(json.dumps(report.summary(), indent=2))
    print(f"{report.jobs} jobs in {report.seconds:.0f} s, {len(report.problems)} problems, RSS "
          f"{report.rss_kib[0][1]}->{report.rss_kib[-1][1]} KiB, fds {report.fds}, tasks {report.tasks}, "
          f"secret hits {len(report.secret_hits)}  [python -m tests.soak.provider_soak --jobs {args.jobs}]")
    return 0 if report.clean else 1


if __name__ == "__main__":
    raise SystemExit(main())

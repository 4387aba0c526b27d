"""Batch and connection floods against the real daemon: its memory, fds and answers stay bounded.

``python -m tests.soak.wire_floods [--batch-mib 60] [--batches 5] [--connections 2000]``

* **Batch bomb**: batches of tiny requests just under the default
  ``daemon.maxMessageBytes`` (64 MiB), sent to a stdio daemon, plain and with
  every member name escaped (``"\\u006asonrpc"``, which defeats the cheap count
  and forces a full parse). Each must be answered with one ``tooLarge``
  (nothing run) and the daemon must keep answering; the figure is the growth of
  its peak RSS (``VmHWM``) over the whole run and the slowest refusal.
* **Connection flood**: ``--connections`` sockets opened at once against a
  ``--tcp`` listener (default ``daemon.maxConnections`` 64), none of them with
  the secret. Those above the cap get one ``busy`` error and are closed; the
  admitted ones are closed by the pre-authentication deadline (10 s; a slot it
  frees while the flood is still connecting admits another); the daemon's open fds
  stay under cap + a small constant; a client with the secret is served after.

Exit 0 when every bound held; the figures are printed either way.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TIMEOUT = 300.0
ITEM = b'{"jsonrpc":"2.0","id":"%08d","method":"debug/echo"}'  # fixed-width ids: the size is exact
ESCAPED = b'{"\\u006asonrpc":"2.0","id":"%08d","method":"debug/echo"}'


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n%b" % (len(body), body)


def read_frame(stream: Any) -> Any:
    header = stream.readline()
    if not header:
        raise EOFError("the daemon closed the connection")
    length = int(header.split(b":")[1])
    stream.readline()
    return json.loads(stream.read(length))


def status(pid: int, key: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line for line in f if line.startswith(key + ":")).split()[1])


def batch(template: bytes, mib: float) -> bytes:
    count = int(mib * (1 << 20)) // (len(template % 1) + 1)
    return b"[" + b",".join(template % i for i in range(count)) + b"]"


@dataclass
class Report:
    batches: int = 0
    refused: int = 0
    rss_growth_mib: float = 0.0
    slowest_refusal_s: float = 0.0
    connections: int = 0
    busy: int = 0
    closed_unauthenticated: int = 0
    peak_fds: int = 0
    served_after: bool = False
    log_lines: int = 0
    problems: list[str] = field(default_factory=list)


def env() -> dict[str, str]:
    return {**os.environ, "PI_SESSIOND_DEBUG_METHODS": "1"}


def batch_flood(report: Report, mib: float, batches: int) -> None:
    """Send ``batches`` batch bombs of ``mib`` MiB (alternating plain and escaped) to one stdio daemon."""
    proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "serve"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env())
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(frame(b'{"jsonrpc":"2.0","id":"warm","method":"debug/echo","params":{}}'))
        proc.stdin.flush()
        read_frame(proc.stdout)
        base = status(proc.pid, "VmHWM")
        for i in range(batches):
            body = batch(ESCAPED if i % 2 else ITEM, mib)
            started = time.monotonic()
            proc.stdin.write(frame(body))
            proc.stdin.flush()
            reply = read_frame(proc.stdout)
            report.slowest_refusal_s = max(report.slowest_refusal_s, time.monotonic() - started)
            report.batches += 1
            error = reply.get("error", {}) if isinstance(reply, dict) else {}
            if error.get("data", {}).get("reason") == "tooLarge" and "maxBatchItems" in error.get("message", ""):
                report.refused += 1
            else:
                report.problems.append(f"batch {i}: {str(reply)[:200]}")
            proc.stdin.write(frame(b'{"jsonrpc":"2.0","id":"ping","method":"debug/echo","params":{}}'))
            proc.stdin.flush()
            if read_frame(proc.stdout).get("id") != "ping":
                report.problems.append(f"batch {i}: a reply other than the ping's came next")
        report.rss_growth_mib = (status(proc.pid, "VmHWM") - base) / 1024
    finally:
        proc.kill()
        proc.wait()


def connection_flood(report: Report, count: int, runtime: Path) -> None:
    """Open ``count`` sockets at once against a TCP listener; none sends the secret."""
    log = runtime / "daemon.log"
    with log.open("wb") as err:  # a file, not a pipe nobody reads: a full pipe would stall the daemon
        proc = subprocess.Popen([sys.executable, "-m", "pi_sessiond", "serve", "--tcp", "127.0.0.1:0"],
                                stderr=err, env={**env(), "XDG_RUNTIME_DIR": str(runtime)})
    try:
        port = _port(log)
        socks = [socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) for _ in range(count)]
        report.connections = len(socks)
        report.peak_fds = _settled_fds(proc.pid, DEFAULT_CAP + FD_SLACK)
        for sock in socks:
            stream = sock.makefile("rb")
            try:
                first = stream.readline()
                if not first:
                    report.closed_unauthenticated += 1
                    continue
                stream.readline()
                reply = json.loads(stream.read(int(first.split(b":")[1])))
                if reply["error"]["data"]["reason"] == "busy":
                    report.busy += 1
            except (ConnectionResetError, TimeoutError) as exc:
                report.problems.append(f"a flood connection: {exc}")
            finally:
                stream.close()
                sock.close()
        report.peak_fds = max(report.peak_fds, len(os.listdir(f"/proc/{proc.pid}/fd")))
        report.served_after = _served(port, runtime)
        report.log_lines = len(log.read_text(errors="replace").splitlines())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            report.problems.append("the daemon did not stop on SIGTERM")
            proc.wait()


def _port(log: Path) -> int:
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        match = re.search(r"tcp://[^:]+:(\d+)", log.read_text(errors="replace"))
        if match:
            return int(match.group(1))
        time.sleep(0.05)
    raise TimeoutError(f"the daemon did not say where it listens: {log.read_text(errors='replace')[-2000:]}")


def _served(port: int, runtime: Path) -> bool:
    secret = (runtime / "pi-sessiond" / f"port-{port}.secret").read_text().strip()
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock:
            init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"capabilities": {}, "initializationOptions": {"secret": secret}}}
            sock.sendall(frame(json.dumps(init).encode()))
            if "result" in read_frame(sock.makefile("rb")):
                return True
        time.sleep(0.2)
    return False


DEFAULT_CAP = 64  # daemon.maxConnections
FD_SLACK = 40  # the daemon's own fds: stdio, the listener, its log, the event loop's


def _settled_fds(pid: int, bound: int, seconds: float = 30.0) -> int:
    """The daemon's open fds once it has dealt with the connections (polled: on a loaded machine the
    refusals of a flood take a while; a count that stays above ``bound`` for ``seconds`` is the answer)."""
    deadline = time.monotonic() + seconds
    while True:
        count = len(os.listdir(f"/proc/{pid}/fd"))
        if count <= bound or time.monotonic() > deadline:
            return count
        time.sleep(0.1)


def check(report: Report, *, cap: int = DEFAULT_CAP, rss_bound_mib: float = 1024) -> list[str]:
    """The bounds; each broken one is a sentence."""
    problems = list(report.problems)
    if report.refused != report.batches:
        problems.append(f"{report.batches - report.refused} batches were not refused")
    if report.rss_growth_mib > rss_bound_mib:
        problems.append(f"peak RSS grew {report.rss_growth_mib:.0f} MiB (bound {rss_bound_mib:.0f})")
    if report.busy + report.closed_unauthenticated != report.connections:
        problems.append(f"of {report.connections} connections only {report.busy} were refused busy and "
                        f"{report.closed_unauthenticated} closed unauthenticated")
    if report.connections and report.busy < report.connections - 4 * cap:
        problems.append(f"only {report.busy} of {report.connections} connections were refused busy")
    if report.peak_fds > cap + FD_SLACK:
        problems.append(f"the daemon held {report.peak_fds} fds (cap {cap})")
    if report.log_lines > 100:
        problems.append(f"the flood wrote {report.log_lines} log lines")
    if report.connections and not report.served_after:
        problems.append("no client with the secret was served after the flood")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak.wire_floods", description=__doc__.split("\n")[0])
    parser.add_argument("--batch-mib", type=float, default=60.0)
    parser.add_argument("--batches", type=int, default=6)
    parser.add_argument("--connections", type=int, default=2000)
    args = parser.parse_args(argv)
    report = Report()
    started = time.monotonic()
    batch_flood(report, args.batch_mib, args.batches)
    with tempfile.TemporaryDirectory(prefix="pi-floods-") as runtime:
        connection_flood(report, args.connections, Path(runtime))
    problems = check(report)
    print(f"batches               {report.batches} of {args.batch_mib:.0f} MiB (half with escaped names): "
          f"{report.refused} refused tooLarge, slowest {report.slowest_refusal_s:.1f} s")
    print(f"peak RSS growth       {report.rss_growth_mib:.0f} MiB")
    print(f"connections           {report.connections} at once: {report.busy} busy, "
          f"{report.closed_unauthenticated} closed unauthenticated, peak {report.peak_fds} fds in the daemon")
    print(f"served after          {report.served_after}; {report.log_lines} log lines for the whole flood")
    print(f"problems              {len(problems)}" + "".join(f"\n  {p}" for p in problems))
    print(f"total time            {time.monotonic() - started:.1f} s")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

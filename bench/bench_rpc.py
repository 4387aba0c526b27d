"""JSON-RPC over stdio: pi-sessiond beside stock pygls 2.1.1 and a hand-written orjson loop (issue 5, "Prove it").

    .venv/bin/python bench/bench_rpc.py                      # all three servers, 10,000 requests each
    .venv/bin/python bench/bench_rpc.py --requests 20000 --starts 9 --json bench/out/rpc.json
    .venv/bin/python bench/bench_rpc.py --servers pi --pi-method auto,debug/echo   # pi only, both requests

Servers (each a fresh subprocess on pipes):

- ``stock``: ``pygls.lsp.server.LanguageServer`` with its default converter and
  ``start_io()``, a sync ``x/echo`` handler returning its params;
- ``floor``: a ~20-line asyncio loop (pipe ``StreamReader``, orjson, no
  dispatch) echoing ``params`` — what any Python server costs at least;
- ``pi``: ``pi-sessiond serve`` (own framing loop + pygls dispatch). The
  trivial request is ``pi/estimateTokens {"text": "hello world"}`` when the
  server advertises it in ``capabilities.experimental.pi.methods``, else
  ``debug/echo`` (printed in the header).

One asyncio client (orjson, Content-Length parsing) measures, per server:
start -> ``initialize`` reply (median of ``--starts`` spawns; the first, cold
one is dropped), then after 500 warm-up requests: **pipelined** (write
``--requests`` requests, then await all replies: req/s) and **sequential**
(one at a time: req/s, p50/p99 latency), and the server's CPU per request
(pipelined; utime+stime from ``/proc/PID/stat``). Targets: pipelined >= 25k
req/s, sequential p50 <= 0.2 ms, start <= 0.5 s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

REPO = Path(__file__).resolve().parents[1]

STOCK = """
from pygls.lsp.server import LanguageServer
server = LanguageServer("stock", "1")
@server.feature("x/echo")
def echo(params):
    return params
server.start_io()
"""

FLOOR = """
import asyncio, sys, orjson
async def main():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    while True:
        length = None
        while (line := await reader.readline()) not in (b"\\r\\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if length is None:
            return
        msg = orjson.loads(await reader.readexactly(length))
        if "id" not in msg:
            continue
        if msg["method"] == "exit":
            return
        body = orjson.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": msg.get("params")})
        writer.write(b"Content-Length: %d\\r\\n\\r\\n%b" % (len(body), body))
        await writer.drain()
asyncio.run(main())
"""


def server_commands(tmp: Path) -> dict[str, list[str]]:
    stock, floor = tmp / "stock.py", tmp / "floor.py"
    stock.write_text(STOCK)
    floor.write_text(FLOOR)
    serve = [sys.executable, "-m", "pi_sessiond", "serve"]
    return {"stock": [sys.executable, str(stock)], "floor": [sys.executable, str(floor)], "pi": serve}


class Client:
    """A minimal LSP client over a subprocess's pipes."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.pending: dict[Any, asyncio.Future[Any]] = {}
        self.reader_task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            header = await out.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length")
            )
            msg = orjson.loads(await out.readexactly(length))
            future = self.pending.pop(msg.get("id"), None)
            if future is not None:
                future.set_result(msg)

    def send(self, msg_id: Any, method: str, params: Any) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.pending[msg_id] = future
        body = orjson.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%b" % (len(body), body))
        return future

    async def call(self, msg_id: Any, method: str, params: Any) -> Any:
        future = self.send(msg_id, method, params)
        assert self.proc.stdin is not None
        await self.proc.stdin.drain()
        return await future

    async def close(self) -> None:
        self.reader_task.cancel()
        if self.proc.returncode is None:
            self.proc.kill()
        await self.proc.wait()


def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


async def spawn(cmd: list[str]) -> tuple[Client, float, Any]:
    env = {**os.environ, "PI_SESSIOND_DEBUG_METHODS": "1"}
    start = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=REPO
    )
    client = Client(proc)
    reply = await asyncio.wait_for(client.call(0, "initialize", {"processId": None, "capabilities": {}}), 30)
    return client, time.perf_counter() - start, reply


def trivial_request(name: str, init_reply: Any, forced: str) -> tuple[str, Any]:
    if name != "pi":
        return "x/echo", {"text": "hello world"}
    if forced != "auto":
        return forced, {"text": "hello world"}
    methods = (((init_reply.get("result") or {}).get("capabilities") or {}).get("experimental") or {}).get("pi", {})
    if "pi/estimateTokens" in methods.get("methods", []):
        return "pi/estimateTokens", {"text": "hello world"}
    return "debug/echo", {"text": "hello world"}


async def measure(name: str, cmd: list[str], requests: int, starts: int, forced: str) -> dict[str, Any]:
    start_times = []
    for _ in range(starts):
        client, elapsed, _reply = await spawn(cmd)
        start_times.append(elapsed)
        await client.close()
    client, _elapsed, reply = await spawn(cmd)
    method, params = trivial_request(name, reply, forced)
    try:
        for i in range(500):
            await client.call(f"w{i}", method, params)
        ticks = cpu_ticks(client.proc.pid)
        t0 = time.perf_counter()
        futures = [client.send(i, method, params) for i in range(requests)]
        assert client.proc.stdin is not None
        await client.proc.stdin.drain()
        replies = await asyncio.gather(*futures)
        pipelined = time.perf_counter() - t0
        cpu = (cpu_ticks(client.proc.pid) - ticks) / os.sysconf("SC_CLK_TCK")
        assert all("result" in r for r in replies), replies[0]
        latencies = []
        for i in range(requests):
            t = time.perf_counter()
            await client.call(f"s{i}", method, params)
            latencies.append(time.perf_counter() - t)
    finally:
        await client.close()
    latencies.sort()
    cold, warm = start_times[0], start_times[1:] or start_times
    return {
        "server": name,
        "method": method,
        "start_s": statistics.median(warm),
        "start_cold_s": cold,
        "pipelined_rps": requests / pipelined,
        "server_cpu_us_per_req": cpu / requests * 1e6,
        "sequential_rps": requests / sum(latencies),
        "p50_ms": latencies[len(latencies) // 2] * 1e3,
        "p99_ms": latencies[int(len(latencies) * 0.99)] * 1e3,
    }


def print_table(rows: list[dict[str, Any]], requests: int, starts: int) -> None:
    load = os.getloadavg()[0]
    print(
        f"# python {platform.python_version()}, {platform.machine()} {os.cpu_count()} cpus, load {load:.2f}; "
        f"requests={requests}, starts={starts} (median, first cold start dropped)"
    )
    print(
        "| server | method | start→initialize (s) | pipelined req/s | server CPU µs/req | seq req/s | p50 ms | p99 ms |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['server']} | `{r['method']}` | {r['start_s']:.3f} | {r['pipelined_rps']:,.0f} | "
            f"{r['server_cpu_us_per_req']:.0f} | {r['sequential_rps']:,.0f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} |"
        )


async def main_async(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        commands = server_commands(Path(tmp))
        rows = []
        for name in args.servers.split(","):
            for forced in args.pi_method.split(",") if name == "pi" else ["auto"]:
                rows.append(await measure(name, commands[name], args.requests, args.starts, forced))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=6, help="spawns for the start time (first one dropped)")
    parser.add_argument("--servers", default="stock,floor,pi")
    parser.add_argument(
        "--pi-method",
        default="auto",
        help="pi's request(s), comma-separated: auto (pi/estimateTokens when advertised), debug/echo, …",
    )
    parser.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = asyncio.run(main_async(args))
    print_table(rows, args.requests, args.starts)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()

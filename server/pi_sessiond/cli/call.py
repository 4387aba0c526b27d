"""``pi-sessiond call [--open FILE] [--connect H:P] METHOD [PARAMS_JSON]``: one request.

Starts a fresh daemon (or connects to one serving TCP), initializes, opens
FILE first when asked (filling ``sessionId`` when the params lack it), sends
the request and prints its result as JSON. An error answer is printed as JSON
on stderr and the exit code is 1; bad arguments exit 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from pi_sessiond.cli.common import CliError, print_json
from pi_sessiond.cli.rpcclient import RpcClient, RpcError

NAME = "call"
HELP = "send one request to a fresh daemon (or --connect H:P) and print the result"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("method", metavar="METHOD", help="e.g. pi/getStats")
    parser.add_argument("params", metavar="PARAMS_JSON", nargs="?", default="{}", help="the params object")
    parser.add_argument("--open", metavar="FILE", help="open FILE first and fill sessionId when missing")
    parser.add_argument("--connect", metavar="HOST:PORT", help="use a daemon serving TCP instead of starting one")


def run(args: argparse.Namespace) -> int:
    params = _params(args.params)
    if args.connect:
        host, _, port = args.connect.rpartition(":")
        if not port.isdigit():
            raise CliError(f"--connect expects HOST:PORT, not {args.connect!r}", 2)
        try:
            client, sock = RpcClient.connect(host or "127.0.0.1", int(port))
        except OSError as exc:
            raise CliError(f"cannot connect to {args.connect}: {exc.strerror or exc}") from None
        try:
            return _session(client, args, params)
        finally:
            sock.close()
    client, proc = RpcClient.spawn([sys.executable, "-m", "pi_sessiond", "serve"])
    try:
        code = _session(client, args, params)
        client.request("shutdown")
        client.notify("exit")
        proc.wait(timeout=10)
        return code
    finally:
        if proc.poll() is None:
            proc.kill()


def _params(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"PARAMS_JSON is not JSON: {exc}", 2) from None
    if not isinstance(value, dict):
        raise CliError("PARAMS_JSON must be a JSON object", 2)
    return value


def _session(client: RpcClient, args: argparse.Namespace, params: dict[str, Any]) -> int:
    try:
        client.request("initialize", {"processId": os.getpid(), "capabilities": {}})
        client.notify("initialized", {})
        if args.open:
            opened = client.request("pi/openSession", {"path": os.path.abspath(args.open)})
            params.setdefault("sessionId", opened["sessionId"])
        result = client.request(args.method, params)
    except RpcError as exc:
        print(json.dumps(exc.error), file=sys.stderr)
        return 1
    print_json(result)
    return 0

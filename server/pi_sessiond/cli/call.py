"""``pi-sessiond call [--open FILE] [--connect H:P | --connect unix:[PATH]] METHOD [PARAMS_JSON]``: one request.

Starts a fresh daemon (or connects to one serving TCP or a Unix socket), initializes, opens
FILE first when asked (filling ``sessionId`` when the params lack it), sends
the request and prints its result as JSON. An error answer is printed as JSON
on stderr and the exit code is 1; bad arguments exit 2. Over TCP the
``initialize`` carries the daemon's secret: ``PI_SESSIOND_SECRET`` when set,
else the one the same user's daemon keeps in ``<runtime dir>/port-<port>.secret``.
``unix:`` alone is the default socket (``serve --unix``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
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
    parser.add_argument("--connect", metavar="HOST:PORT",
                        help="use a daemon serving TCP (or unix:[PATH], a Unix socket) instead of starting one")


def run(args: argparse.Namespace) -> int:
    params = _params(args.params)
    if args.connect:
        client, sock, secret = _connect(args.connect)
        try:
            return _session(client, args, params, secret)
        finally:
            sock.close()
    client, proc = RpcClient.spawn([sys.executable, "-m", "pi_sessiond", "serve"])
    try:
        code = _session(client, args, params, None)
        client.request("shutdown")
        client.notify("exit")
        proc.wait(timeout=10)
        return code
    finally:
        if proc.poll() is None:
            proc.kill()


def _connect(target: str) -> tuple[RpcClient, socket.socket, str | None]:
    """A client of the daemon at ``target`` (``H:P`` or ``unix:[PATH]``) and the secret to send (TCP)."""
    from pi_sessiond.wire import auth

    try:
        if target.startswith("unix:"):
            path = target.removeprefix("unix:") or str(auth.default_socket_path())
            client, sock = RpcClient.connect_unix(path)
            return client, sock, None
        host, _, port = target.rpartition(":")
        if not port.isdigit():
            raise CliError(f"--connect expects HOST:PORT or unix:PATH, not {target!r}", 2)
        client, sock = RpcClient.connect(host.strip("[]") or "127.0.0.1", int(port))
    except OSError as exc:
        raise CliError(f"cannot connect to {target}: {exc.strerror or exc}") from None
    return client, sock, os.environ.get(auth.SECRET_ENV) or auth.read_secret(int(port))


def _params(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CliError(f"PARAMS_JSON is not JSON: {exc}", 2) from None
    if not isinstance(value, dict):
        raise CliError("PARAMS_JSON must be a JSON object", 2)
    return value


def _session(client: RpcClient, args: argparse.Namespace, params: dict[str, Any], secret: str | None) -> int:
    initialize: dict[str, Any] = {"processId": os.getpid(), "capabilities": {}}
    if secret is not None:
        initialize["initializationOptions"] = {"secret": secret}
    try:
        client.request("initialize", initialize)
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

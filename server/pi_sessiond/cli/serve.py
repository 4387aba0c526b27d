"""``pi-sessiond [serve] [--stdio | --tcp H:P | --ws H:P | --unix [PATH]] [--allow-remote] [--log-file F] …``.

stdio is the default: one client, the process exit code is the LSP one (0
after ``shutdown`` + ``exit`` or at EOF, 1 for ``exit`` without ``shutdown``
or a broken frame). ``--tcp``/``--ws``/``--unix`` serve any number of clients, each with
its own server and Daemon (on ``--unix`` the connections share the open sessions,
:mod:`pi_sessiond.rpc.sharing`), until interrupted; the listening address is printed
to stderr as ``pi-sessiond: listening on tcp://HOST:PORT`` (port 0 picks a
free one; a WebSocket URL carries the secret as ``?token=``).

Safety (:mod:`pi_sessiond.wire.auth`): TCP and WebSocket need the daemon's
secret (``PI_SESSIOND_SECRET`` from the launching client, else generated),
kept in ``<runtime dir>/port-<port>.secret`` (0600) while the listener runs;
only loopback addresses unless ``--allow-remote``; a WebSocket handshake with an
``Origin`` only for ``--allow-origin`` values. Their clients may not set the
summarizer's key variable, URL or headers (``security.allowWireApiKeyEnv``).
``--unix`` (default ``<runtime dir>/daemon.sock``) needs no secret: its
directory is 0700, the socket 0600, the peer's uid is checked. Every listener
caps connections (``daemon.maxConnections``) and closes idle ones
(``daemon.idleConnectionSeconds``), read from the global settings when it starts.
Every connection enforces the ``daemon.maxMessageBytes`` of its
settings (default < global file < ``initializationOptions``); a WebSocket
listener also caps every message at the global value it had when it started.
Logs go to ``--log-file`` or stderr, never stdout. This module
imports nothing heavy, so ``--help`` stays fast and the import of pygls counts
only when serving.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import importlib.util
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pi_sessiond.wire import auth

LOG_LEVELS = ("debug", "info", "warning", "error")


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """The serve options (also used by the bare ``pi-sessiond``)."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout (default)")
    mode.add_argument("--tcp", type=_address, metavar="HOST:PORT", help="serve TCP clients on HOST:PORT")
    mode.add_argument("--ws", type=_address, metavar="HOST:PORT", help="serve WebSocket clients (needs websockets)")
    mode.add_argument("--unix", nargs="?", const="", metavar="PATH",
                      help="serve this user's clients on a Unix socket (default: <runtime dir>/daemon.sock)")
    parser.add_argument("--allow-remote", action="store_true",
                        help="let --tcp/--ws listen on a non-loopback address (clients still need the secret)")
    parser.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                        help="a browser Origin that may open a --ws connection (repeatable; default: none)")
    parser.add_argument("--log-file", metavar="FILE", help="append logs to FILE instead of stderr")
    parser.add_argument("--log-level", choices=LOG_LEVELS, default="warning", help="default: warning")


NAME = "serve"
HELP = "run the daemon (JSON-RPC with LSP framing; stdio by default)"
configure = configure_parser


def setup_logging(log_file: str | None, level_name: str) -> None:
    """Logs to ``log_file`` or stderr; pygls' own loggers stay at WARNING or above."""
    handler: logging.Handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    level = getattr(logging, level_name.upper())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.getLogger("pygls").setLevel(max(level, logging.WARNING))


def _announce(kind: str, secret: str | None, files: contextlib.ExitStack) -> Any:
    from pi_sessiond.wire import auth

    def ready(host: str, port: int) -> None:
        where = f"{kind}://{host}:{port}"
        if secret is not None:
            path = files.enter_context(auth.published_secret(port, secret))
            where += f"/?token={secret}" if kind == "ws" else f" (secret in {path})"
        print(f"pi-sessiond: listening on {where}", file=sys.stderr, flush=True)

    return ready


def _gate(secret: str | None, *, same_user_only: bool = False) -> auth.ConnectionGuard:
    from pi_sessiond.settings import load_settings
    from pi_sessiond.wire import auth

    daemon = load_settings().settings.daemon
    return auth.ConnectionGuard(secret, daemon.max_connections, daemon.idle_connection_seconds, _error_reply,
                         same_user_only=same_user_only)


def _error_reply(msg_id: Any, reason: str, message: str) -> bytes:
    """A listener's refusal as the rpc boundary words it (code from the reason table)."""
    import json

    from pi_sessiond.rpc.errors import reason_error
    from pi_sessiond.rpc.jsonrpc import error_reply

    error = reason_error(reason, message)
    return json.dumps(error_reply(msg_id, error.code, error.message, error.data)).encode()


def run(args: argparse.Namespace) -> int:
    """Serve until EOF / ``exit`` (stdio) or until interrupted (TCP, WebSocket, Unix socket)."""
    try:
        setup_logging(getattr(args, "log_file", None), getattr(args, "log_level", "warning"))
    except OSError as exc:
        print(f"pi-sessiond serve: --log-file {exc.filename or args.log_file}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    gc.disable()  # the imports make only long-lived objects (modules, classes): no collection walks them
    from pi_sessiond.rpc import codecache

    codecache.install()  # before pygls: lsprotocol's classes reuse the code an earlier start compiled
    from pi_sessiond.app import make_server

    tcp, ws, unix = getattr(args, "tcp", None), getattr(args, "ws", None), getattr(args, "unix", None)
    if tcp is None and ws is None and unix is None:
        from pi_sessiond.wire import stdio

        _freeze_imports()
        try:
            return stdio.run_stdio(make_server)
        finally:
            _stop_workers()
    _freeze_imports()
    from pi_sessiond.wire import auth

    problem = _refusal(tcp or ws, getattr(args, "allow_remote", False)) if unix is None else None
    if problem is not None:
        print(f"pi-sessiond serve: {problem}", file=sys.stderr)
        return 2
    import signal

    signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        with contextlib.ExitStack() as files:
            asyncio.run(_listen(args, files))
    except KeyboardInterrupt:
        return 0
    except (OSError, auth.WireSetupError) as exc:
        print(f"pi-sessiond serve: {exc}", file=sys.stderr)
        return 1
    finally:
        _stop_workers()
    return 0


def _freeze_imports() -> None:
    """Collections from now on leave what the imports made alone (it lives as long as the process)."""
    gc.freeze()
    gc.enable()


def _stop_workers() -> None:
    """Stop the summary worker processes and threads, if any started, while the interpreter is whole
    (a pool left to the interpreter's teardown logs its own errors there)."""
    workers = sys.modules.get("pi_sessiond.summarizers.workers")
    if workers is not None:
        workers.shutdown()


TERM_GRACE_SECONDS = 10.0


def _on_sigterm(*_: object) -> None:
    """Unwind (the secret file and the socket are removed on the way); if the unwinding itself hangs
    (a task that does not take its cancellation), leave anyway after :data:`TERM_GRACE_SECONDS`."""
    import os
    import threading

    timer = threading.Timer(TERM_GRACE_SECONDS, os._exit, args=(0,))
    timer.daemon = True
    timer.start()
    sys.exit(0)


def _refusal(address: tuple[str, int] | None, allow_remote: bool) -> str | None:
    from pi_sessiond.wire import auth

    if address is None or allow_remote or auth.is_loopback(address[0]):
        return None
    return (f"refusing to listen on {address[0]}: it is not a loopback address. Pass --allow-remote to accept "
            "clients from other machines (they still need the daemon's secret; nothing is encrypted)")


async def _listen(args: argparse.Namespace, files: contextlib.ExitStack) -> None:
    from pi_sessiond.app import make_server
    from pi_sessiond.wire import auth, listeners

    network = functools.partial(make_server, network_client=True)
    if args.unix is not None:
        path = auth.prepare_socket_path(Path(args.unix) if args.unix else auth.default_socket_path())
        ready = functools.partial(print, "pi-sessiond: listening on unix:", sep="", file=sys.stderr, flush=True)
        from pi_sessiond.rpc.sharing import SharedSessions

        sessions = SharedSessions()
        shared = functools.partial(make_server, daemon_factory=sessions.daemon_factory, handlers=sessions.handlers)
        await listeners.serve_unix(str(path), shared, ready, _gate(None, same_user_only=True))
        return
    secret = auth.new_secret()
    if args.tcp is not None:
        host, port = args.tcp
        await listeners.serve_tcp(host, port, network, _announce("tcp", secret, files), _gate(secret))
        return
    if importlib.util.find_spec("websockets") is None:
        raise auth.WireSetupError("--ws needs the 'websockets' package: pip install 'pi-sessiond[ws]'")
    from pi_sessiond.settings import load_settings
    from pi_sessiond.wire.websocket import serve_ws

    cap = load_settings().settings.daemon.max_message_bytes
    host, port = args.ws
    await serve_ws(host, port, network, _announce("ws", secret, files), max_size=cap, gate=_gate(secret),
                   origins=tuple(args.allow_origin))


class _Parser(argparse.ArgumentParser):
    """A usage error in one line (exit code 2), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def main(argv: Sequence[str] | None = None) -> int:
    """``pi-sessiond`` without a subcommand (or ``pi-sessiond serve …``) without importing the other commands."""
    parser = _Parser(prog="pi-sessiond serve", description="run the pi-sessiond daemon")
    configure_parser(parser)
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        args = args[1:]
    return run(parser.parse_args(args))


if __name__ == "__main__":
    sys.exit(main())

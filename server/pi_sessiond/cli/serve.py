"""``pi-sessiond [serve] [--stdio | --tcp H:P | --ws H:P] [--log-file F] [--log-level L]``.

stdio is the default: one client, the process exit code is the LSP one (0
after ``shutdown`` + ``exit`` or at EOF, 1 for ``exit`` without ``shutdown``
or a broken frame). ``--tcp``/``--ws`` serve any number of clients, each with
its own server and Daemon, until interrupted; the listening address is printed
to stderr as ``pi-sessiond: listening on tcp://HOST:PORT`` (port 0 picks a
free one). Every connection enforces the ``daemon.maxMessageBytes`` of its
settings (default < global file < ``initializationOptions``); a WebSocket
listener also caps every message at the global value it had when it started.
Logs go to ``--log-file`` or stderr, never stdout. This module
imports nothing heavy, so ``--help`` stays fast and the import of pygls counts
only when serving.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import Any

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


def _announce(kind: str) -> Any:
    def ready(host: str, port: int) -> None:
        print(f"pi-sessiond: listening on {kind}://{host}:{port}", file=sys.stderr, flush=True)

    return ready


def run(args: argparse.Namespace) -> int:
    """Serve until EOF / ``exit`` (stdio) or until interrupted (TCP, WebSocket)."""
    try:
        setup_logging(getattr(args, "log_file", None), getattr(args, "log_level", "warning"))
    except OSError as exc:
        print(f"pi-sessiond serve: --log-file {exc.filename or args.log_file}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    from pi_sessiond import transport
    from pi_sessiond.app import make_server

    tcp, ws = getattr(args, "tcp", None), getattr(args, "ws", None)
    if tcp is None and ws is None:
        return transport.run_stdio(make_server)
    if ws is not None:
        import importlib.util

        if importlib.util.find_spec("websockets") is None:
            print("pi-sessiond serve: --ws needs the 'websockets' package (pip install 'pygls[ws]')", file=sys.stderr)
            return 1
    import asyncio

    try:
        if tcp is not None:
            asyncio.run(transport.serve_tcp(tcp[0], tcp[1], make_server, _announce("tcp")))
        elif ws is not None:
            from pi_sessiond.settings import load_settings

            cap = load_settings().settings.daemon.max_message_bytes
            from pi_sessiond.websocket import serve_ws

            asyncio.run(serve_ws(ws[0], ws[1], make_server, _announce("ws"), max_size=cap))
    except KeyboardInterrupt:
        return 0
    except OSError as exc:
        print(f"pi-sessiond serve: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``pi-sessiond`` without a subcommand (or ``pi-sessiond serve …``) without importing the other commands."""
    parser = argparse.ArgumentParser(prog="pi-sessiond serve", description="run the pi-sessiond daemon")
    configure_parser(parser)
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["serve"]:
        args = args[1:]
    return run(parser.parse_args(args))


if __name__ == "__main__":
    sys.exit(main())

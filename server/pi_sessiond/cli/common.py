"""Helpers shared by the subcommands: opening FILE, printing JSON."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

from pi_sessiond.errors import PiError
from pi_sessiond.examples import example_path
from pi_sessiond.store.session import Session


class CliError(Exception):
    """A failure reported on stderr with an exit code (1 failed, 2 usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    """``FILE`` or ``--example``."""
    parser.add_argument("file", nargs="?", metavar="FILE", help="a Pi session .jsonl file")
    parser.add_argument("--example", action="store_true", help="use the small example session bundled with pi-sessiond")


def session_path(args: argparse.Namespace, *, writes: bool = False) -> Path:
    """The file to work on; a temporary copy of the example when the command writes."""
    if args.example and args.file:
        raise CliError("give FILE or --example, not both", 2)
    if args.example:
        source = example_path()
        if not writes:
            return source
        tmp = Path(tempfile.mkdtemp(prefix="pi-sessiond-example-")) / source.name
        shutil.copyfile(source, tmp)
        return tmp
    if not args.file:
        raise CliError("FILE or --example is required", 2)
    return Path(args.file)


def open_session(path: Path) -> Session:
    """Open a session file or fail with a clear message."""
    if not path.exists():
        raise CliError(f"{path}: no such file")
    if path.is_dir():
        raise CliError(f"{path}: is a directory")
    try:
        session = Session.open(path)
    except OSError as exc:
        raise CliError(f"{path}: {exc.strerror or exc}") from exc
    except PiError as exc:
        raise CliError(f"{path}: {exc}") from exc
    for warning in session.warnings:
        print(f"{path}:{warning.line}: warning: {warning.message}", file=sys.stderr)
    return session


def print_json(value: Any) -> None:
    """Write one JSON document (and a newline) to stdout."""
    write_bytes(orjson.dumps(value) + b"\n")


def write_bytes(data: bytes) -> None:
    """Write raw bytes to stdout."""
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def preview(text: str, width: int = 72) -> str:
    """One line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"

"""What the subcommands share: the parser, FILE / ``--example``, JSON output, the error type."""

from __future__ import annotations

import argparse
import atexit
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, NoReturn

import orjson

from pi_sessiond.examples import example_path
from pi_sessiond.jsonio.deepjson import deep_dumps

EXAMPLE_KEEP_RECENT = 6000  # the example's context is ~21k tokens: Pi's 20k default would keep it all


class CliError(Exception):
    """A failure reported on stderr with an exit code (1 failed, 2 usage)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage error in one line (then exit code 2), never a usage dump."""

    def error(self, message: str) -> NoReturn:
        raise CliError(f"{message} (see {self.prog} --help)", 2)


def add_file_argument(parser: argparse.ArgumentParser) -> None:
    """``FILE`` or ``--example``."""
    parser.add_argument("file", nargs="?", metavar="FILE", help="a Pi session .jsonl file")
    parser.add_argument("--example", action="store_true", help="use the small example session bundled with pi-sessiond")


def add_quiet_argument(parser: argparse.ArgumentParser) -> None:
    """``--quiet``: no progress on stderr (there is none anyway when stderr is not a terminal)."""
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr while a model works")


def session_path(args: argparse.Namespace, *, writes: bool = False) -> Path:
    """The file to work on; a temporary copy of the example when the command writes (removed at exit)."""
    if args.example and args.file:
        raise CliError("give FILE or --example, not both", 2)
    if args.example:
        source = example_path()
        if not writes:
            return source
        folder = tempfile.mkdtemp(prefix="pi-sessiond-example-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)  # a trial copy: gone when the command ends
        tmp = Path(folder) / source.name
        shutil.copyfile(source, tmp)
        return tmp
    if not args.file:
        raise CliError("FILE or --example is required", 2)
    return Path(args.file)


def print_json(value: Any) -> None:
    """Write one JSON document (and a newline) to stdout."""
    sys.stdout.flush()
    try:
        body = orjson.dumps(value)
    except TypeError:  # nested deeper than orjson writes
        body = deep_dumps(value).encode("utf-8")
    sys.stdout.buffer.write(body + b"\n")
    sys.stdout.buffer.flush()


def preview(text: str, width: int = 72) -> str:
    """One line of at most ``width`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"

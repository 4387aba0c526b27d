"""The subcommands of ``pi-sessiond`` (everything but serving the daemon).

Each subcommand has its own parser, so options and arguments may come in any
order (``navigate FILE --summarize TARGET``). Exit codes: 0 success, 1 the
operation failed, 2 usage error; every failure is one line on stderr, never a
traceback. Results go to stdout, progress and warnings to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import re
import sys
from collections.abc import Sequence
from types import ModuleType

from pi_sessiond.cli import call as call_command
from pi_sessiond.cli import compact as compact_command
from pi_sessiond.cli import completion as completion_command
from pi_sessiond.cli import context as context_command
from pi_sessiond.cli import demo as demo_command
from pi_sessiond.cli import holdlock as holdlock_command
from pi_sessiond.cli import listing as list_command
from pi_sessiond.cli import navigate as navigate_command
from pi_sessiond.cli import serve as serve_command
from pi_sessiond.cli import settingscmd as settings_command
from pi_sessiond.cli import stats as stats_command
from pi_sessiond.cli import tree as tree_command
from pi_sessiond.cli.common import CliError, Parser
from pi_sessiond.errors import PiError

COMMANDS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (serve_command, list_command, context_command, tree_command, compact_command, navigate_command,
                   stats_command, settings_command, call_command, demo_command, completion_command,
                   holdlock_command)
}


def usage() -> str:
    """The top-level help: one line per subcommand."""
    lines = ["usage: pi-sessiond [COMMAND] [ARGS…]   (no COMMAND: serve the daemon on stdio)", "", "commands:"]
    lines += [f"  {name:10s} {module.HELP}" for name, module in COMMANDS.items()]
    lines += ["", "`pi-sessiond COMMAND --help` describes each; --json prints the matching pi/* result.",
              "`pi-sessiond --version` prints the version."]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    completion_command.complete_if_asked(COMMANDS)
    if not args or args[0] in ("-h", "--help", "help"):
        print(usage(), file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    name, rest = args[0], args[1:]
    logging.basicConfig(level=logging.WARNING, format=f"pi-sessiond {name}: %(message)s")  # settings warnings
    module = COMMANDS.get(name)
    if module is None:
        print(f"pi-sessiond: unknown command {name!r} (see pi-sessiond --help)", file=sys.stderr)
        return 2
    return run(name, module, rest)


def run(name: str, module: ModuleType, argv: list[str]) -> int:
    """Parse ``argv`` for ``module`` and run it; every failure becomes one line and an exit code."""
    prefix = f"pi-sessiond {name}"
    try:
        parser = Parser(prog=prefix, description=plain(module.__doc__ or ""),
                        formatter_class=argparse.RawDescriptionHelpFormatter)
        module.configure(parser)
        code: int = module.run(parser.parse_intermixed_args(argv))
    except CliError as exc:
        return _fail(f"{prefix}: {exc}", exc.code)
    except PiError as exc:
        return _fail(f"{prefix}: {exc}", 1)
    except BrokenPipeError:  # the reader of stdout went away (`… | head`)
        return 1
    except OSError as exc:
        return _fail(f"{prefix}: {_os_message(exc)}", 1)
    except KeyboardInterrupt:
        return _fail(f"{prefix}: interrupted", 130)
    except Exception as exc:  # a bug: still one line, never a traceback
        return _fail(f"{prefix}: internal error ({type(exc).__name__}: {exc}); please report it", 1)
    return code


def plain(doc: str) -> str:
    """A module docstring as --help shows it: reST markup (roles, double backquotes, ``::``) made plain text."""
    return re.sub(r":\w+:`~?([^`]+)`", r"\1", doc).replace("``", "").replace("::\n", ":\n").strip()


def _os_message(exc: OSError) -> str:
    where = f"{exc.filename}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def _fail(message: str, code: int) -> int:
    with contextlib.suppress(BrokenPipeError):
        print(message, file=sys.stderr)
    return code

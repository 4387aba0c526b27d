"""``pi-sessiond completion bash|zsh|fish``: a shell completion script, completed from the parser itself.

The script comes from argcomplete: at each Tab the shell runs ``pi-sessiond``
with ``_ARGCOMPLETE`` set, and it answers from one parser that holds every
subcommand's own, so every flag completes as the commands define it. Install, e.g.::

    pi-sessiond completion bash > ~/.local/share/bash-completion/completions/pi-sessiond
    pi-sessiond completion zsh > "${fpath[1]}/_pi-sessiond"
    pi-sessiond completion fish > ~/.config/fish/completions/pi-sessiond.fish
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping
from types import ModuleType

NAME = "completion"
HELP = "print a bash, zsh or fish completion script (see --help for where to put it)"
SHELLS = ("bash", "zsh", "fish")
PROG = "pi-sessiond"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode([PROG], shell=args.shell))
    return 0


def whole_parser(commands: Mapping[str, ModuleType]) -> argparse.ArgumentParser:
    """One parser with every subcommand's options (only for completing; each command parses alone)."""
    parser = argparse.ArgumentParser(prog=PROG)
    parser.add_argument("--version", "-V", action="store_true", help="print the version")
    sub = parser.add_subparsers(dest="command")
    for name, module in commands.items():
        module.configure(sub.add_parser(name, help=module.HELP))
    return parser


def complete_if_asked(commands: Mapping[str, ModuleType]) -> None:
    """Answer the shell's completion request and exit, when this run is one (``_ARGCOMPLETE`` set)."""
    if "_ARGCOMPLETE" not in os.environ:
        return
    import argcomplete

    argcomplete.autocomplete(whole_parser(commands))

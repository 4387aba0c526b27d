"""Files a bash command changes: moves, copies, deletions, in-place edits, redirects.

``changed_paths(command)`` reads one shell command line (or script) and
returns the paths it creates, edits, moves or deletes, in the order they
appear. It is a reader of common shapes, not a shell: nothing is expanded or
run.

Invariants:

* Pure and deterministic; a command it cannot tokenize is split on blanks.
* Heredoc bodies and ``#`` comments are not commands (``cat > f <<EOF``
  changes ``f`` only).
* Recognized: ``mv``/``git mv`` (source and target), ``cp``/``install``/
  ``ln`` (target), ``rm``/``git rm``/``unlink``/``shred`` (each operand),
  ``touch``/``truncate`` (each operand), ``sed -i`` and
  ``perl -i`` (the files after the script), ``tee`` (each operand), ``patch``
  with a named target, and ``>``/``>>``/``>|``/``&>`` redirects. Options
  (``-x``), ``/dev/*`` targets, variables and globs are skipped.
* Files, not folders: ``mkdir``/``rmdir`` name none; a move or copy into a
  folder (``mv a.ts utils/``, ``mv x/a.ts .``) names the file it creates
  there; a trailing ``/`` is dropped.
* ``sudo``, ``command``, ``env VAR=x`` and ``VAR=x`` prefixes are looked
  through.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")", "|&", ";;"})
_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>"})
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1[^\n]*\n(.*?)(?:^\s*\2\s*$|\Z)", re.S | re.M)
_ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
_IN_PLACE = re.compile(r"^-[a-zA-Z]*i|^--in-place")
_PREFIXES = frozenset({"sudo", "command", "env", "time", "nohup", "xargs", "exec"})
_EACH_OPERAND = frozenset({"rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "tee"})
_TARGET_ONLY = frozenset({"cp", "install", "ln"})
_OPTION_VALUE = {"truncate": {"-s", "--size"}, "install": {"-m", "--mode", "-o", "-g"}, "mkdir": {"-m"}}


def changed_paths(command: str) -> list[str]:
    """The paths ``command`` creates, edits, moves or deletes, first mention first, no repeats."""
    seen: dict[str, None] = {}
    for words in _simple_commands(_tokens(_without_heredocs(command))):
        for path in _changed_by(words):
            if _plausible(path):
                seen.setdefault(path, None)
    return list(seen)


def _without_heredocs(command: str) -> str:
    return _HEREDOC.sub(lambda m: m.group(0).split("\n", 1)[0] + "\n", command)


def _tokens(command: str) -> list[str]:
    flat = _without_comments(command.replace("\\\n", " ")).replace("\n", " ; ")
    lexer = shlex.shlex(flat, posix=True, punctuation_chars=";&|()<>")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return command.split()


def _without_comments(command: str) -> str:
    """``command`` without shell comments: a ``#`` that starts a word, outside quotes, to the end of its line."""
    out: list[str] = []
    quote = ""
    skipping = False
    for n, char in enumerate(command):
        if skipping:
            skipping = char != "\n"
            if skipping:
                continue
        elif quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (n == 0 or command[n - 1].isspace()):
            skipping = True
            continue
        out.append(char)
    return "".join(out)


def _simple_commands(tokens: list[str]) -> Iterator[list[str]]:
    """Words of each simple command, redirect targets kept as ``>`` + path pairs."""
    current: list[str] = []
    for token in tokens:
        if token in _SEPARATORS or (set(token) <= set(";&|()") and token):
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _changed_by(words: list[str]) -> Iterator[str]:
    words, targets = _split_redirects(words)
    yield from targets
    words = _strip_prefixes(words)
    if not words:
        return
    name, args = words[0].rsplit("/", 1)[-1], words[1:]
    if name == "git" and args[:1] in (["mv"], ["rm"]):
        name, args = args[0], args[1:]
    yield from _by_program(name, args)


def _by_program(name: str, args: list[str]) -> Iterator[str]:
    operands = _operands(args, _OPTION_VALUE.get(name, set()))
    if name in ("mkdir", "rmdir"):
        return  # a folder is no file
    if name == "mv":
        yield from (src.rstrip("/") or src for src in operands[:-1])
        yield from _targets(operands[:-1], operands[-1:])
    elif name in _TARGET_ONLY:
        yield from _targets(operands[:-1], operands[-1:]) if len(operands) >= 2 else ()
    elif name in _EACH_OPERAND:
        yield from (op.rstrip("/") or op for op in operands)
    elif name in ("sed", "perl") and any(_IN_PLACE.match(a) for a in args):
        yield from _in_place_files(name, args)
    elif name == "patch" and operands:
        yield operands[0]


def _targets(sources: list[str], target: list[str]) -> Iterator[str]:
    """What a move or copy into ``target`` creates: the target file, or each source's name inside a folder
    (a target ending in ``/``, ``.`` or ``..``)."""
    if not target:
        return
    into = target[0]
    if not (into.endswith("/") or into in (".", "..")):
        yield into
        return
    for src in sources:
        base = src.rstrip("/").rsplit("/", 1)[-1]
        yield base if into == "." else f"{into.rstrip('/')}/{base}"


def _split_redirects(words: list[str]) -> tuple[list[str], list[str]]:
    kept: list[str] = []
    targets: list[str] = []
    skip = False
    for n, word in enumerate(words):
        if skip:
            skip = False
            continue
        nxt = words[n + 1] if n + 1 < len(words) else ""
        if word.isdigit() and nxt in _REDIRECTS | {">&", "<"}:
            continue
        if word in _REDIRECTS:
            if nxt:
                targets.append(nxt)
            skip = True
        elif word in (">&", "<", "<<", "<<<", "<&"):
            skip = True
        else:
            kept.append(word)
    return kept, targets


def _strip_prefixes(words: list[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word) or word in _PREFIXES or (index and words[index - 1] == "sudo" and word[:1] == "-"):
            index += 1
            continue
        break
    return words[index:]


def _operands(args: list[str], valued: set[str]) -> list[str]:
    found: list[str] = []
    skip = False
    ended = False
    for arg in args:
        if skip:
            skip = False
        elif ended or not arg.startswith("-") or arg == "-":
            found.append(arg)
        elif arg == "--":
            ended = True
        elif arg in valued:
            skip = True
    return found


def _in_place_files(name: str, args: list[str]) -> list[str]:
    """Operands of ``sed -i``/``perl -i`` after the script (the first operand unless ``-e`` gave it)."""
    files: list[str] = []
    script_given = False
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-e", "-f", "--expression", "--file") or (name == "perl" and arg in ("-pe", "-ne", "-pie")):
            script_given, skip = True, True
        elif arg.startswith("-") or (arg == "" and not script_given):
            continue  # an option, or BSD sed's empty backup suffix (``sed -i '' …``)
        elif not script_given:
            script_given = True
        else:
            files.append(arg)
    return files


def _plausible(path: str) -> bool:
    if not path or path.startswith(("/dev/", "$", "-")) or path in (".", "..", "/", "~"):
        return False
    return not any(c in path for c in "*?[]{}`$|\"' \n") and len(path) <= 4096

"""Comments state rules, not provenance: no comment or docstring points to a document the repository lacks.

A pointer is an issue or finding number, an upstream issue, or the name of a
project document kept outside the repository (the contract, the reference
notes, the house style). Code strings are not scanned: only Python comments
and bare string statements (docstrings), and the comments of the TypeScript,
Lua and Emacs Lisp sources.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

POINTER = re.compile(
    r"\b[Ii]ssues? #?\d+|\b[Ff]indings? \d+|upstream #\d+|PROTOCOL\.md|STYLE\.md|lsp-pygls|pi-1\.6\.md"
    r"|pi-behaviour|shared/reference|reference §|\(§"
)
ROOTS = (
    "server/pi_sessiond",
    "protocol/pi_protocol",
    "editors/vscode/src",
    "editors/nvim/lua",
    "editors/pi/src",
    "editors/emacs",
)
SUFFIXES = (".py", ".ts", ".lua", ".el")
LINE_COMMENT = {".ts": "//", ".lua": "--", ".el": ";"}
QUOTES = {".ts": "\"'`", ".lua": "\"'", ".el": '"'}


def python_comments(text: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every comment and every line of a bare string statement."""
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    lines = text.splitlines()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for number in range(node.lineno, (node.end_lineno or node.lineno) + 1):
                yield number, lines[number - 1]


def _comment_start(line: str, marker: str, quotes: str) -> int | None:
    """Where ``marker`` starts a comment on ``line`` (outside quotes), or ``None``."""
    quote = ""
    for i, char in enumerate(line):
        if quote:
            quote = "" if char == quote and line[i - 1] != "\\" else quote
        elif char in quotes:
            quote = char
        elif line.startswith(marker, i):
            return i
    return None


def source_comments(text: str, suffix: str) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every line comment, and of every line inside ``/* */`` (TypeScript)."""
    in_block = False
    for number, line in enumerate(text.splitlines(), 1):
        if suffix == ".ts" and (in_block or line.lstrip().startswith("/*")):
            in_block = "*/" not in line
            yield number, line
            continue
        start = _comment_start(line, LINE_COMMENT[suffix], QUOTES[suffix])
        if start is not None:
            yield number, line[start:]


def pointers_in(path: Path) -> list[tuple[int, str]]:
    """The comment lines of ``path`` that point to a document instead of stating a rule."""
    text = path.read_text(encoding="utf-8")
    comments = python_comments(text) if path.suffix == ".py" else source_comments(text, path.suffix)
    return sorted({(number, line.strip()) for number, line in comments if POINTER.search(line)})


def sources() -> Iterator[Path]:
    for root in ROOTS:
        for path in sorted((REPO / root).rglob("*")):
            if path.suffix in SUFFIXES and "node_modules" not in path.parts and path.name != "protocol.ts":
                yield path


def test_comments_state_rules_not_provenance() -> None:
    found = [f"{path.relative_to(REPO)}:{number}: {line}" for path in sources() for number, line in pointers_in(path)]
    assert not found, "state the rule instead of pointing to a document:\n" + "\n".join(found)


def test_the_scan_covers_every_source_tree() -> None:
    scanned = {path.suffix for path in sources()}
    assert {".py", ".ts", ".lua"} <= scanned


def test_a_planted_pointer_is_caught_in_each_language(tmp_path: Path) -> None:
    planted = {
        "a.py": '"""Heavy calls off the loop (issue 15, finding 7)."""\n\nx = 1  # see PROTOCOL.md "Settings"\n',
        "b.ts": '/**\n * Pi\'s range (reference §6).\n */\nconst url = "https://x"; // lsp-pygls.md §1.2\n',
        "c.lua": "local s = '--' -- SESSION (PROTOCOL.md)\n",
        "d.el": ';; shared/reference/pi-1.6.md item 2\n(setq x "a;b")\n',
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = {name: [n for n, _ in pointers_in(tmp_path / name)] for name in planted}
    assert found == {"a.py": [1, 3], "b.ts": [2, 4], "c.lua": [1], "d.el": [1]}


def test_code_strings_and_rules_are_not_pointers(tmp_path: Path) -> None:
    planted = {
        "a.py": '"""Loading never rewrites a file."""\n\nDOC = "beyond PROTOCOL.md"\n',
        "b.ts": 'const doc = "PROTOCOL.md // issue 12";\n// the daemon answers -32800 when cancelled\n',
        "c.lua": "local doc = 'issue 3 -- finding 2'\n-- finding the leaf walks up the tree\n",
    }
    for name, text in planted.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert all(pointers_in(tmp_path / name) == [] for name in planted)

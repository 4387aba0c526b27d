"""``pi-sessiond tree FILE [--json]``: every entry, as a tree or as JSON."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

import orjson

from pi_sessiond.cli.common import add_file_argument, open_session, preview, session_path, write_bytes
from pi_sessiond.store.entry import Entry
from pi_sessiond.store.jsontext import dumps
from pi_sessiond.store.kinds import entry_text
from pi_sessiond.store.session import Session


def add_parser(sub: Any) -> None:
    parser = sub.add_parser("tree", help="print the session tree")
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help='print {"leafId", "entries"}: every entry in file order')
    parser.set_defaults(run=run)


def tree_json(session: Session) -> bytes:
    """``{"leafId", "entries"}`` with each unchanged entry spliced in verbatim."""
    parts = [entry.raw or dumps(entry.data) for entry in session.entries]
    head = b'{"leafId":' + orjson.dumps(session.leaf_id) + b',"entries":['
    return head + b",".join(parts) + b"]}\n"


def run(args: argparse.Namespace) -> int:
    session = open_session(session_path(args))
    if args.json:
        write_bytes(tree_json(session))
        return 0
    active = {e.id for e in session.path_to()}
    name = f" “{session.tree.name}”" if session.tree.name else ""
    print(f"session {session.id}{name}  entries: {len(session.entries)}  leaf: {session.leaf_id}")
    for entry, depth in display_walk(session):
        mark = "*" if entry.id == session.leaf_id else ("│" if entry.id in active else " ")
        label = session.tree.labels.get(entry.id)
        tag = f" [{label}]" if label else ""
        print(f"{mark} {'  ' * depth}{entry.id} {describe_entry(entry)}{tag}")
    return 0


def display_walk(session: Session) -> Iterator[tuple[Entry, int]]:
    """Depth-first like Pi's tree view: indentation grows only at branch points."""
    tree = session.tree
    stack = [(root, 0) for root in reversed(tree.roots())]
    while stack:
        node, indent = stack.pop()
        yield node, indent
        children = tree.sorted_children(node.id)
        step = 1 if len(children) > 1 else 0
        stack.extend((child, indent + step) for child in reversed(children))


def describe_entry(entry: Entry) -> str:
    """``type/role: preview`` for one tree line (the preview text comes from ``store/kinds.py``)."""
    what = str((entry.message or {}).get("role", "?")) if entry.type == "message" else entry.type
    text = preview(entry_text(entry), 60)
    return f"{what}: {text}" if text else what

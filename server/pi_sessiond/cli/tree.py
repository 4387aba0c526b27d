"""``pi-sessiond tree FILE [--limit N] [--json]``: every entry, as a tree (``pi/getTree``) or as JSON.

``--json`` prints ``pi/getEntries`` (every entry in file order).

Each line is ``MARK ID type: preview [label]``; the legend line under the
header says what the marks mean. ``--limit N`` prints only the last N lines
(the newest part of the tree, where the leaf usually is).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from pi_protocol import unstructure
from pi_protocol.params import GetEntriesParams, GetTreeParams
from pi_protocol.results import TreeNode, TreeResult
from pi_sessiond.cli.common import add_file_argument, preview, print_json, session_path
from pi_sessiond.cli.local import local_daemon

NAME = "tree"
HELP = "the session tree (--json: every entry in file order)"


def configure(parser: argparse.ArgumentParser) -> None:
    add_file_argument(parser)
    parser.add_argument("--json", action="store_true", help='print {"leafId", "entries"}: every entry in file order')
    parser.add_argument("--limit", type=_positive, metavar="N", help="print only the last N lines of the tree")


def run(args: argparse.Namespace) -> int:
    with local_daemon() as local:
        info = local.open(session_path(args))
        if args.json:
            entries = local.service.get_entries(GetEntriesParams(session_id=info.session_id, since="root"))
            print_json({"leafId": info.leaf_id, "entries": unstructure(entries)["entries"]})
            return 0
        tree = local.service.get_tree(GetTreeParams(session_id=info.session_id))
    print(f"session {info.session_id}  entries: {tree.total}  leaf: {tree.leaf_id or '(none)'}")
    print(LEGEND)
    lines = list(indented(tree))
    first = max(0, len(lines) - args.limit) if args.limit is not None else 0
    if first:
        print(f"  … {first} earlier lines (--limit {args.limit})")
    for node, depth in lines[first:]:
        mark = "*" if node.id == tree.leaf_id else ("│" if node.on_active_path else " ")
        tag = f" [{node.label}]" if node.label else ""
        print(f"{mark} {'  ' * depth}{node.id} {describe(node)}{tag}")
    return 0


LEGEND = "legend: * the leaf   │ on the path to the leaf   indented: a branch   [name] a label"


def _positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def indented(tree: TreeResult) -> Iterator[tuple[TreeNode, int]]:
    """The nodes (depth-first, Pi's order) with an indentation that grows only at branch points."""
    by_id = {node.id: node for node in tree.nodes}
    depth: dict[str, int] = {}
    for node in tree.nodes:
        parent = by_id.get(node.parent_id) if node.parent_id else None
        if parent is None:
            depth[node.id] = 0
        else:
            depth[node.id] = depth[parent.id] + (1 if len(parent.child_ids) > 1 else 0)
        yield node, depth[node.id]


def describe(node: TreeNode) -> str:
    """``type/role: preview`` for one tree line."""
    kind = f"{node.role}" if node.type == "message" and node.role else node.type
    return f"{kind}: {preview(node.preview, 60)}" if node.preview else kind

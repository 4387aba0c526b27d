"""``pi-sessiond tree FILE [--json]``: every entry, as a tree (``pi/getTree``) or as JSON (``pi/getEntries``)."""

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


def run(args: argparse.Namespace) -> int:
    with local_daemon() as local:
        info = local.open(session_path(args))
        if args.json:
            entries = local.service.get_entries(GetEntriesParams(session_id=info.session_id, since="root"))
            print_json({"leafId": info.leaf_id, "entries": unstructure(entries)["entries"]})
            return 0
        tree = local.service.get_tree(GetTreeParams(session_id=info.session_id))
    print(f"session {info.session_id}  entries: {tree.total}  leaf: {tree.leaf_id or '(none)'}")
    for node, depth in indented(tree):
        mark = "*" if node.id == tree.leaf_id else ("│" if node.on_active_path else " ")
        tag = f" [{node.label}]" if node.label else ""
        print(f"{mark} {'  ' * depth}{node.id} {describe(node)}{tag}")
    return 0


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

"""The one-way dependencies of docs/architecture.md: no module imports against the arrows."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

SERVER = REPO / "server" / "pi_sessiond"

# Lower rank first; a package may import only packages of a strictly lower rank (and itself).
RANKS: dict[str, int] = {
    "pi_protocol": 0,
    "(root)": 1,  # pi_sessiond/__init__.py: the version only
    "errors": 1,
    "transport": 1,
    "wireauth": 1,
    "websocket": 2,
    "listeners": 2,
    "stdio": 2,
    "store": 2,
    "compaction": 3,
    "estimators": 4,
    "summarizers": 4,
    "settings": 4,
    "examples": 4,
    "pipeline": 5,
    "service": 6,
    "rpc": 7,
    "app": 8,
    "cli": 9,
    "api": 9,
    "__main__": 10,
}


def package_of(module: str) -> str | None:
    """The architecture package of a dotted module name (``None`` for anything not ours)."""
    parts = module.split(".")
    if parts[0] == "pi_protocol":
        return "pi_protocol"
    if parts[0] != "pi_sessiond":
        return None
    return parts[1] if len(parts) > 1 and parts[1] != "__init__" else "(root)"


def imports(path: Path) -> Iterator[str]:
    """Every module ``path`` imports (``from pi_sessiond import x`` counts as ``pi_sessiond.x``)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pi_sessiond":
                yield from (f"pi_sessiond.{alias.name}" for alias in node.names)
            else:
                yield node.module


def violations(edges: dict[str, set[str]]) -> list[str]:
    """``a -> b`` edges that go up or sideways (unknown packages are violations too)."""
    bad = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets - {source}):
            if source not in RANKS or target not in RANKS or RANKS[target] >= RANKS[source]:
                bad.append(f"{source} -> {target}")
    return bad


def server_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for path in SERVER.rglob("*.py"):
        source = package_of(".".join(path.relative_to(SERVER.parent).with_suffix("").parts))
        assert source is not None
        for module in imports(path):
            target = package_of(module)
            if target is not None:
                edges.setdefault(source, set()).add(target)
    return edges


def test_every_import_follows_the_arrows() -> None:
    edges = server_edges()
    assert set(edges) <= set(RANKS), f"packages missing from RANKS and docs/architecture.md: {set(edges) - set(RANKS)}"
    assert violations(edges) == []


def test_the_checker_catches_upward_sideways_and_unknown_imports() -> None:
    edges = {"store": {"pipeline", "errors"}, "summarizers": {"settings"}, "newthing": {"store"}, "cli": {"service"}}
    assert violations(edges) == ["newthing -> store", "store -> pipeline", "summarizers -> settings"]


def test_the_protocol_and_everything_below_rpc_stay_free_of_pygls() -> None:
    for path in SERVER.rglob("*.py"):
        package = package_of(".".join(path.relative_to(SERVER.parent).with_suffix("").parts))
        if package is not None and RANKS[package] < RANKS["rpc"]:
            assert not any(m.split(".")[0] in ("pygls", "lsprotocol") for m in imports(path)), path

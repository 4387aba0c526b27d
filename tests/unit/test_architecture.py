"""The house rules of docs/architecture.md: one-way arrows, no circles, short floors, one name per thing."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

from tests.conftest import REPO

SERVER = REPO / "server" / "pi_sessiond"
PROTOCOL = REPO / "protocol" / "pi_protocol"
SOURCE_ROOTS = (SERVER.parent, PROTOCOL.parent)

# Lower rank first; a package may import only packages of a strictly lower rank (and itself).
RANKS: dict[str, int] = {
    "pi_protocol": 0,
    "(root)": 1,  # pi_sessiond/__init__.py: the version only
    "errors": 1,
    "jsonio": 1,
    "store": 2,
    "wire": 3,
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
MAX_SERVICE_FLOORS = 5
MAX_LOOSE_MODULES = 5


# ------------------------------------------------------------------ the graph
def modules() -> dict[str, Path]:
    """Every module of ours by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for root in SOURCE_ROOTS:
        for base in (SERVER, PROTOCOL):
            if base.parent != root:
                continue
            for path in base.rglob("*.py"):
                parts = list(path.relative_to(root).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                found[".".join(parts)] = path
    return found


def imported(module: str, path: Path) -> Iterator[str]:
    """Every dotted name ``path`` imports, at any depth (in functions and under ``TYPE_CHECKING`` too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def module_edges() -> dict[str, set[str]]:
    """``module -> the modules of ours it imports``."""
    known = modules()

    def resolve(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for module, path in known.items():
        targets = {resolve(name) for name in imported(module, path)}
        edges[module] = {t for t in targets if t is not None and t != module and not module.startswith(t + ".")}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def floors(edges: dict[str, set[str]]) -> dict[str, int]:
    """Floor of each node of an acyclic graph: 1 + the highest floor it imports (1 for none)."""

    @functools.cache
    def floor(node: str) -> int:
        return 1 + max((floor(t) for t in edges.get(node, ())), default=0)

    return {node: floor(node) for node in edges}


def service_rooms(edges: dict[str, set[str]]) -> dict[str, set[str]]:
    """The rooms of ``service/`` (its modules and subpackages) and which rooms each imports."""
    prefix = "pi_sessiond.service."

    def room(module: str) -> str | None:
        return module[len(prefix):].split(".")[0] if module.startswith(prefix) else None

    rooms: dict[str, set[str]] = {}
    for module, targets in edges.items():
        source = room(module)
        if source is not None:
            rooms.setdefault(source, set()).update(
                r for r in (room(t) for t in targets) if r is not None and r != source)
    return rooms


# -------------------------------------------------------------- the arrows
def package_of(module: str) -> str | None:
    """The architecture package of a dotted module name (``None`` for anything not ours)."""
    parts = module.split(".")
    if parts[0] == "pi_protocol":
        return "pi_protocol"
    if parts[0] != "pi_sessiond":
        return None
    return parts[1] if len(parts) > 1 and parts[1] != "__init__" else "(root)"


def violations(edges: dict[str, set[str]]) -> list[str]:
    """``a -> b`` edges that go up or sideways (unknown packages are violations too)."""
    bad = []
    for source, targets in sorted(edges.items()):
        for target in sorted(targets - {source}):
            if source not in RANKS or target not in RANKS or RANKS[target] >= RANKS[source]:
                bad.append(f"{source} -> {target}")
    return bad


def package_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for module, targets in module_edges().items():
        source = package_of(module)
        if source is not None and source != "pi_protocol":
            edges.setdefault(source, set()).update(p for p in map(package_of, targets) if p is not None)
    return edges


def test_every_import_follows_the_arrows() -> None:
    edges = package_edges()
    assert set(edges) <= set(RANKS), f"packages missing from RANKS and docs/architecture.md: {set(edges) - set(RANKS)}"
    assert violations(edges) == []


def test_the_checker_catches_upward_sideways_and_unknown_imports() -> None:
    edges = {"store": {"pipeline", "errors"}, "summarizers": {"settings"}, "newthing": {"store"}, "cli": {"service"}}
    assert violations(edges) == ["newthing -> store", "store -> pipeline", "summarizers -> settings"]


def test_the_protocol_and_everything_below_rpc_stay_free_of_pygls() -> None:
    for module, path in modules().items():
        package = package_of(module)
        if package is not None and RANKS[package] < RANKS["rpc"]:
            assert not any(m.split(".")[0] in ("pygls", "lsprotocol") for m in imported(module, path)), path


# ------------------------------------------------------------ the house rules
def test_no_import_circle_anywhere() -> None:
    """Counting imports inside functions and under ``TYPE_CHECKING``."""
    assert cycles(module_edges()) == []


def test_the_circle_finder_finds_a_type_only_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(edges) == [["a", "b", "c"]]
    assert floors({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == {"a": 2, "b": 1, "c": 3}


def test_service_has_at_most_five_floors_of_rooms() -> None:
    rooms = service_rooms(module_edges())
    assert cycles(rooms) == []
    highest = floors(rooms)
    assert max(highest.values()) <= MAX_SERVICE_FLOORS, sorted(highest.items(), key=lambda kv: kv[1])


def test_few_loose_modules_at_the_root() -> None:
    loose = sorted(p.name for p in SERVER.glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(loose) <= MAX_LOOSE_MODULES, loose


def _assigned_aliases(path: Path) -> Iterator[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and ast.unparse(node.value).replace(" ", "") == "dict[str,Any]":
            yield from (ast.unparse(t) for t in node.targets)


def test_one_json_alias() -> None:
    declared = [(str(path.relative_to(REPO)), name) for path in modules().values() for name in _assigned_aliases(path)]
    assert declared == [("protocol/pi_protocol/base.py", "JsonDict")]


def test_no_class_name_is_defined_twice() -> None:
    where: dict[str, list[str]] = {}
    for path in modules().values():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(REPO)))
    assert {name: paths for name, paths in where.items() if len(paths) > 1} == {}


def test_no_method_is_bound_by_a_string() -> None:
    """Every ``getattr`` in the JSON-RPC layer names a constant attribute; the table has no service names."""
    for path in [*(SERVER / "rpc").glob("*.py"), SERVER / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr":
                assert isinstance(node.args[1], ast.Constant), f"{path.name}:{node.lineno}"
    from pi_protocol.methods import MethodSpec
    from pi_sessiond.service.daemon import HANDLERS, Daemon

    assert "service" not in {f.name for f in MethodSpec.__attrs_attrs__}
    assert all(getattr(Daemon, fn.__name__) is fn for fn in HANDLERS.values())


def test_settings_are_resolved_in_few_places() -> None:
    """A request's settings are resolved once, at its entry point (``scope_of``)."""
    calls = []
    for module, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("scope_of", "settings_for"):
                    calls.append(f"{module}:{node.lineno}")
    assert 0 < len(calls) <= 5, calls

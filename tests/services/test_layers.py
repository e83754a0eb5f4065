"""The layers of docs/architecture.md, read from the code's own imports.

Each layer imports only the ones below it, the groups inside ``app/services/`` and
``app/web/`` depend on each other one way only, and nothing imports a private name from
another module. Every import is an arrow a reader follows, so every import counts, for
the layer rules and for circles alike: one inside a function, and one only for the type
checker (``if TYPE_CHECKING:``), too. The benchmarks in ``bench/`` import each other by
their bare names (the folder is their ``sys.path[0]``) and may form no circle either.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.security._support import REPO

APP = REPO / "app"
BENCH = REPO / "bench"
# Which packages each layer may not import, lowest layer first.
FORBIDDEN = {
    "app.transport": ("app.brains", "app.db", "app.services", "app.web"),
    "app.brains": ("app.db", "app.services", "app.web"),
    "app.db": ("app.services", "app.web"),
    "app.services": ("app.web",),
}


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # the module imported (a package's name when a name comes from its __init__)
    names: tuple[str, ...]  # what ``from … import`` takes from it


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in APP.rglob("*.py")}


def _resolve(module: str, name: str) -> str:
    return f"{module}.{name}" if f"{module}.{name}" in MODULES else module


def imports() -> Iterator[Import]:
    for source, path in MODULES.items():
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(source, alias.name, ())
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    yield Import(source, _resolve(base, alias.name), (alias.name,))


ALL = [i for i in imports() if i.target == "app" or i.target.startswith("app.")]


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def group(module: str, package: str) -> str:
    """The folder (or top-level module) of ``package`` that ``module`` belongs to."""
    return module.removeprefix(package + ".").split(".")[0]


@pytest.mark.parametrize("layer", list(FORBIDDEN))
def test_no_layer_imports_one_above_it(layer: str) -> None:
    wrong = [
        f"{i.source} imports {i.target}"
        for i in ALL
        if within(i.source, layer) and any(within(i.target, up) for up in FORBIDDEN[layer])
    ]
    assert wrong == []


def test_the_store_imports_no_other_service() -> None:
    store = "app.services.store"
    wrong = [
        f"{i.source} imports {i.target}"
        for i in ALL
        if within(i.source, store)
        and within(i.target, "app.services")
        and not within(i.target, store)
        and i.target != "app.services"
    ]
    assert wrong == []


def _cycle(edges: dict[str, set[str]]) -> list[str]:
    """One cycle of the graph, as the nodes along it (empty: there is none)."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str]:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return []
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            if found := visit(nxt):
                return found
        path.pop()
        done.add(node)
        return []

    for start in sorted(edges):
        if found := visit(start):
            return found
    return []


def bench_imports() -> Iterator[tuple[str, str]]:
    """(importer, imported) for each import of one benchmark script by another."""
    scripts = {p.stem for p in BENCH.glob("*.py")}
    for path in BENCH.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                targets = [node.module]
            else:
                continue
            yield from ((path.stem, t) for t in targets if t in scripts and t != path.stem)


def app_imports() -> Iterator[tuple[str, str]]:
    # A package's __init__ runs before its modules, so importing it is no circle.
    return ((i.source, i.target) for i in ALL if not within(i.source, i.target))


@pytest.mark.parametrize("where", ["app", "bench"])
def test_no_import_circle(where: str) -> None:
    edges: dict[str, set[str]] = {}
    for source, target in app_imports() if where == "app" else bench_imports():
        edges.setdefault(source, set()).add(target)
    assert edges  # the imports were read at all
    assert _cycle(edges) == []


@pytest.mark.parametrize("package", ["app.services", "app.web"])
def test_the_groups_depend_on_each_other_one_way(package: str) -> None:
    edges: dict[str, set[str]] = {}
    for i in ALL:
        if within(i.source, package) and within(i.target, package) and i.target != package:
            a, b = group(i.source, package), group(i.target, package)
            if a != b:
                edges.setdefault(a, set()).add(b)
    assert _cycle(edges) == []


def test_no_module_imports_a_private_name_from_another() -> None:
    wrong = [
        f"{i.source} imports {name} from {i.target}"
        for i in ALL
        for name in i.names
        if name.startswith("_") and not name.startswith("__") and i.target != i.source
    ]
    assert wrong == []


@pytest.mark.parametrize("package", ["app.services", "app.web"])
def test_the_modules_beside_the_folders_import_none_of_them(package: str) -> None:
    depth = package.count(".") + 1
    folders = {group(m, package) for m in MODULES if within(m, package) and m.count(".") > depth}
    wrong = [
        f"{i.source} imports {i.target}"
        for i in ALL
        if within(i.source, package)
        and i.source.count(".") == depth
        and within(i.target, package)
        and group(i.target, package) in folders
    ]
    assert folders and wrong == []

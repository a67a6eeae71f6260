"""No import circles in probemeter: no two modules import each other, directly or around a
loop, whether the import is at module level, inside a function or under ``TYPE_CHECKING``.
Allowed: ``cli.main`` and ``cli.completion`` (the completion script is built from the parser,
and ``main`` dispatches to it).

The graph is read from the source with ``ast``: ``import a.b`` and ``from a import b`` (``b``
a submodule when one exists, else ``a`` itself), relative imports resolved. A package's
``__init__`` is the package's node. ``python tests/test_import_graph.py`` prints the graph's
size and its circles.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[1] / "src"
ROOT = "probemeter"
ALLOWED_CIRCLES = [
    {"probemeter.cli.main", "probemeter.cli.completion"},
]


def _modules() -> dict[str, Path]:
    modules = {}
    for path in sorted((SOURCE / ROOT).rglob("*.py")):
        parts = list(path.relative_to(SOURCE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _is_package(name: str, modules: dict[str, Path]) -> bool:
    return modules[name].name == "__init__.py"


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it sits inside a function."""

    def walk(
        node: ast.AST, in_function: bool
    ) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, in_function
            inside = in_function or isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
            )
            yield from walk(child, inside)

    yield from walk(tree, False)


def import_graph() -> tuple[dict[str, set[str]], set[tuple[str, str]]]:
    """The modules of probemeter and whom each imports; and the edges made only by imports
    inside functions."""
    modules = _modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    module_level: set[tuple[str, str]] = set()
    function_level: set[tuple[str, str]] = set()
    for name, path in modules.items():
        package = name if _is_package(name, modules) else name.rpartition(".")[0]
        for node, in_function in _imports(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                if node.level:
                    base = package.split(".")
                    base = base[: len(base) - node.level + 1]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in modules else source)
            for target in targets:
                while target and target not in modules:  # import a.b.name of a module a.b
                    target = target.rpartition(".")[0]
                if target and target != name:
                    edges[name].add(target)
                    (function_level if in_function else module_level).add((name, target))
    return edges, function_level - module_level


def circles(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        for node in sorted(edges):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(found, key=lambda component: sorted(component))


def test_the_graph_is_read() -> None:
    edges, _ = import_graph()
    assert "probemeter.curves.curve" in edges
    assert "probemeter.training.config" in edges["probemeter.curves.curve"]


def test_no_import_circles() -> None:
    edges, _ = import_graph()
    unexpected = [
        sorted(component)
        for component in circles(edges)
        if not any(component <= allowed for allowed in ALLOWED_CIRCLES)
    ]
    assert unexpected == []


def test_the_paper_packages_defaults_import_nothing_of_their_package() -> None:
    """Each paper package's ``defaults`` module is at its bottom: the method and the compute
    modules import it, it imports neither."""
    edges, _ = import_graph()
    for package in ("curves", "mdl", "pareto", "power", "structural"):
        name = f"{ROOT}.{package}.defaults"
        assert not {t for t in edges[name] if t.startswith(f"{ROOT}.{package}")}, name


def test_the_circles_finder_finds_a_circle() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(edges) == [{"a", "b", "c"}]


if __name__ == "__main__":
    edges, only_in_functions = import_graph()
    found = circles(edges)
    print(f"{len(edges)} modules, {sum(map(len, edges.values()))} imports, {len(found)} circles")
    short = {name: name.removeprefix(ROOT + ".") for name in edges}
    for component in found:
        members = sorted(component)
        print(
            f"\n{len(members)} modules: "
            + ", ".join(name.removeprefix(ROOT + ".") for name in members)
        )
        for source in members:
            for target in sorted(edges[source] & component):
                how = " (inside a function)" if (source, target) in only_in_functions else ""
                print(f"    {short[source]} -> {short[target]}{how}")

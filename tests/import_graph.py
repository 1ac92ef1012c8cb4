"""Every import between modules of ``bridge_plugins`` and ``recipes``, read with ``ast`` from the
source (also those inside functions and under ``if TYPE_CHECKING:``), for the tests that check the
import graph (tests/test_import_graph.py); nothing is imported."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bridge_plugins",)


@dataclass(frozen=True)
class Import:
    """One import of a module of ours: who imports what, at which line, and where the statement is."""

    importer: str
    imported: str
    line: int
    in_function: bool
    type_checking: bool


def modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module's dotted name and its file (a package is its ``__init__.py``)."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module of ours that ``name`` (a module or a name inside one) is in, or None."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(node: ast.Import | ast.ImportFrom, package: str, known: dict[str, Path]) -> list[str]:
    """The dotted names an import statement loads: ``from a import b`` is ``a.b`` where that is a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parts = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(known: dict[str, Path] | None = None) -> list[Import]:
    """Every import of one of our modules by another, once per statement and target."""
    known = known if known is not None else modules()
    found: list[Import] = []
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]

        def visit(
            node: ast.AST, in_function: bool, type_checking: bool, name: str = name, package: str = package
        ) -> None:
            for child in ast.iter_child_nodes(node):
                fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
                tc = type_checking or _is_type_checking(child)
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in dict.fromkeys(_targets(child, package, known)):
                        ours = _resolve(target, known)
                        if ours is not None and ours != name:
                            found.append(Import(name, ours, child.lineno, fn, tc))
                visit(child, fn, tc)

        visit(ast.parse(path.read_text(encoding="utf-8")), False, False)
    return found


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found

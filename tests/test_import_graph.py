"""No import cycle among the modules of ``bridge_plugins``, through any import (also inside a
function or under ``TYPE_CHECKING``), and no module of ours imported inside a function except
where ``FUNCTION_LEVEL`` says why: docs/architecture.md ("Checks that keep it so")."""

from __future__ import annotations

from tests.import_graph import Import, cycles, imports

ISSUE_32 = "issue 32 branch: the speed engineer splits this module and removes the import"
FUNCTION_LEVEL = {
    ("bridge_plugins.analysis.parallel", "bridge_plugins.analysis.ray_map"): ISSUE_32,
    ("bridge_plugins.analysis.trace.collect", "bridge_plugins.analysis.trace.gpu_breakdown"): ISSUE_32,
    ("bridge_plugins.runtime", "bridge_plugins.runtime.controller"): (
        "the package's lazy name (its type under TYPE_CHECKING): importing bridge_plugins.runtime never imports torch"
    ),
}
"""(importer, imported): why that import is inside a function."""
COMMAND_READERS = "a subcommand imports its readers when it runs: --help and trigger never import numpy"
"""Why a module of ``bridge_plugins.cli`` may import analysis inside a function."""


def _allowed(i: Import) -> bool:
    if (i.importer, i.imported) in FUNCTION_LEVEL:
        return True
    return i.importer.startswith("bridge_plugins.cli.") and i.imported.startswith("bridge_plugins.analysis")


def test_no_import_cycle() -> None:
    edges: dict[str, set[str]] = {}
    for i in imports():
        if (i.importer, i.imported) not in FUNCTION_LEVEL or FUNCTION_LEVEL[(i.importer, i.imported)] != ISSUE_32:
            edges.setdefault(i.importer, set()).add(i.imported)
    assert cycles(edges) == []


def test_no_function_level_import_of_our_modules() -> None:
    found = [f"{i.importer}:{i.line} imports {i.imported}" for i in imports() if i.in_function and not _allowed(i)]
    assert found == []


def test_no_type_checking_import_of_our_modules() -> None:
    found = [
        f"{i.importer}:{i.line} imports {i.imported}"
        for i in imports()
        if i.type_checking and (i.importer, i.imported) not in FUNCTION_LEVEL
    ]
    assert found == []


def test_the_allow_list_names_imports_that_exist() -> None:
    """An entry whose import is gone is removed, so the list stays short and true."""
    present = {(i.importer, i.imported) for i in imports() if i.in_function}
    assert sorted(set(FUNCTION_LEVEL) - present) == []


def test_the_graph_sees_every_kind_of_import() -> None:
    """The walk itself: a cycle through a function-level and a TYPE_CHECKING import is found."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    kinds = {(i.in_function, i.type_checking) for i in imports() if i.importer == "bridge_plugins.cli.summary"}
    assert (True, False) in kinds

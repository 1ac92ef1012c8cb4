"""docs/architecture.md matches the code: its tree of ``analysis/`` has one line per module (C
ones too), no more and no fewer, each with what it does; every other package's section names each of its modules.
Checked as docs/analysis-schema.md is against the result classes (tests/analysis/test_schema_doc.py)."""

from __future__ import annotations

import re

from tests.support import ROOT

DOC = ROOT / "docs" / "architecture.md"
PACKAGE = ROOT / "bridge_plugins"
LINE = re.compile(r"^(?P<indent> *)(?P<name>[\w.]+/?)(?: +(?P<what>\S.*))?$")


def tree_lines() -> list[str]:
    """The lines of the page's ``text`` block that starts with ``analysis/``."""
    block = re.search(r"```text\n(analysis/\n.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert block is not None, "docs/architecture.md has the analysis tree"
    return block.group(1).splitlines()


def tree() -> dict[str, str]:
    """Each module of the tree (a path under bridge_plugins/) and what its line says it does."""
    modules: dict[str, str] = {}
    folders: list[str] = []
    for line in tree_lines():
        m = LINE.match(line)
        assert m is not None, f"not a tree line: {line!r}"
        depth = len(m["indent"]) // 2
        folders = folders[:depth]
        if m["name"].endswith("/"):
            folders.append(m["name"].rstrip("/"))
        else:
            modules["/".join([*folders, m["name"]])] = m["what"] or ""
    return modules


def test_the_tree_has_one_line_per_module_of_analysis():
    listed = tree()
    actual = {str(p.relative_to(PACKAGE)) for p in (PACKAGE / "analysis").rglob("*.py")}
    actual |= {str(p.relative_to(PACKAGE)) for p in (PACKAGE / "analysis").rglob("*.c")}  # a C module too
    assert len(actual) > 50
    assert sorted(set(listed) - actual) == [], "in the tree, not in the code"
    assert sorted(actual - set(listed)) == [], "in the code, not in the tree"


def test_every_line_of_the_tree_says_what_its_module_does():
    assert [name for name, what in tree().items() if len(what.split()) < 2] == []


def section(package: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(rf"^### {package}/.*?$(.*?)(?=^##)", text, re.S | re.M)
    assert m is not None, f"docs/architecture.md has a section for {package}/"
    return m.group(1)


def test_every_other_package_section_names_each_of_its_modules():
    missing, unknown = [], []
    for package in ("config", "jobdir", "plugins", "runtime", "cli"):
        named = {n for n in re.findall(r"`([\w/]+\.py)`", section(package)) if not n.startswith("tests/")}
        actual = {str(p.relative_to(PACKAGE / package)) for p in (PACKAGE / package).rglob("*.py")}
        missing += [f"{package}/{n}" for n in sorted(actual - named) if not n.endswith("__init__.py")]
        unknown += [f"{package}/{n}" for n in sorted(named - actual)]
    assert (missing, unknown) == ([], [])


def test_every_name_two_modules_share_is_in_the_names_table_with_its_modules():
    """A name two modules share says one subject: docs/architecture.md's "Names" table lists each,
    with every module that carries it, and nothing else."""
    text = DOC.read_text(encoding="utf-8")
    table = re.search(r"^## Names\n(.*?)(?=^## )", text, re.S | re.M)
    assert table is not None, "docs/architecture.md has a Names section"
    listed: dict[str, set[str]] = {}
    for row in re.findall(r"^\| `([\w.]+)` \|[^|]*\|([^\n]*)\|$", table.group(1), re.M):
        name, where = row
        listed[name] = {f"{d}{name}" for d in re.findall(r"`([\w/]+/)`", where)}
    by_name: dict[str, set[str]] = {}
    for p in PACKAGE.rglob("*.py"):
        if p.name != "__init__.py":
            by_name.setdefault(p.name, set()).add(str(p.relative_to(PACKAGE)))
    shared = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert {n: sorted(p) for n, p in listed.items()} == {n: sorted(p) for n, p in shared.items()}

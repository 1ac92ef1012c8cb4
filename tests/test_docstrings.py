"""Module docstrings say what a module does and why in a few lines; formats, definitions, limits and
threat reasoning belong to the docs pages (docs/), where one place holds each."""

from __future__ import annotations

import ast

from tests.support import ROOT

MAX_LINES = 8


def docstring_lengths() -> dict[str, int]:
    lengths = {}
    for path in sorted((ROOT / "bridge_plugins").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        if doc is not None:
            lengths[str(path.relative_to(ROOT))] = len(doc.splitlines())
    return lengths


def test_module_docstrings_are_at_most_8_lines():
    lengths = docstring_lengths()
    assert len(lengths) > 50, "the walk found the package's modules"
    too_long = [f"{name}: {n} lines" for name, n in lengths.items() if n > MAX_LINES]
    assert not too_long, f"module docstrings longer than {MAX_LINES} lines (move the detail to docs/): {too_long}"

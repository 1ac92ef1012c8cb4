"""Every module of ``bridge_plugins`` and ``recipes`` is at most 300 lines (small files with one
job each: docs/contributing.md); the files another branch splits are listed as pending."""

from __future__ import annotations

from tests.support import ROOT

MAX_LINES = 300
PENDING: dict[str, str] = {}
"""Files over the limit, each with who splits it; the lead removes an entry when that branch merges."""


def line_counts() -> dict[str, int]:
    return {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for package in ("bridge_plugins", "recipes")
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def test_every_module_is_at_most_300_lines():
    counts = line_counts()
    assert len(counts) > 100, "the walk found the modules"
    too_long = {name: n for name, n in counts.items() if n > MAX_LINES and name not in PENDING}
    assert too_long == {}


def test_a_pending_file_is_still_over_the_limit():
    """An entry whose file was split (or is gone) is removed, so the list stays true."""
    counts = line_counts()
    assert {name for name in PENDING if counts.get(name, 0) <= MAX_LINES} == set()

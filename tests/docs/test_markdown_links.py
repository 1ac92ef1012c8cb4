"""Relative links in the README and the docs pages resolve as GitHub shows them: the file exists,
and a #anchor names a heading of that file. The README's driver lines are the example's."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.site import DOCS, REPO, markdown_anchors

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _links(path: Path) -> list[str]:
    text, fenced, out = path.read_text(encoding="utf-8"), False, []
    for line in text.splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            out += LINK.findall(re.sub(r"`[^`]*`", "", line))
    return out


def _broken(path: Path) -> list[str]:
    broken = []
    for url in _links(path):
        parts = urlsplit(url)
        if parts.scheme:
            continue
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not target.exists():
            broken.append(f"{url}: no {target}")
        elif parts.fragment and target.suffix == ".md" and parts.fragment not in markdown_anchors(target):
            broken.append(f"{url}: no heading with anchor #{parts.fragment} in {target.name}")
    return broken


def test_readme_is_short_and_every_relative_link_resolves():
    readme = REPO / "README.md"
    assert len(readme.read_text(encoding="utf-8").splitlines()) <= 150
    links = _links(readme)
    assert len([u for u in links if not urlsplit(u).scheme]) >= 15, links
    assert not _broken(readme), "\n".join(_broken(readme))


@pytest.mark.parametrize(
    "page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if "_build" not in p.parts)
)
def test_every_relative_link_of_a_docs_page_resolves_on_github_too(page):
    broken = _broken(DOCS / page)
    assert not broken, "\n".join(broken)


def test_the_readme_driver_is_the_committed_example():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```python\n(.*?)```", readme, re.S)
    assert block, "the README has no python block"
    example = {line.rstrip() for line in (REPO / "examples" / "profile_tiny_gpt.py").read_text().splitlines()}
    foreign = [line for line in block.group(1).splitlines() if line.strip() and line.rstrip() not in example]
    assert not foreign, f"README driver lines not in examples/profile_tiny_gpt.py: {foreign}"

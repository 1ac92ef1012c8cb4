"""What the docs tests share: building the site, reading its pages, GitHub-style heading anchors."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def require_sphinx() -> None:
    """Skip without the docs tools (the `docs` extra), except under CI=true, where it fails."""
    try:
        import furo  # noqa: F401
        import myst_parser  # noqa: F401
        import sphinx  # noqa: F401
        import sphinxarg  # noqa: F401
    except ImportError as e:
        why = f"the docs extra is not installed ({e}); scripts/setup.sh installs it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(why)
        pytest.skip(why)


@dataclass
class Build:
    out: Path
    returncode: int
    log: str
    seconds: float


def build_site(out: Path) -> Build:
    """A fresh build of docs/ into ``out`` by scripts/docs.sh: nitpicky, warnings as errors."""
    env = {**os.environ, "PYTHON": sys.executable, "OUT": str(out)}
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "docs.sh")], capture_output=True, text=True, env=env, timeout=600, cwd=REPO
    )
    return Build(out, proc.returncode, proc.stdout + proc.stderr, time.monotonic() - start)


@dataclass
class Page:
    """One built HTML page: the ids it defines and the URLs it refers to, by tag and attribute."""

    ids: set[str] = field(default_factory=set)
    refs: list[tuple[str, str, str]] = field(default_factory=list)  # (tag, attribute, url)


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.page = Page()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name") and (name == "id" or tag == "a"):
                self.page.ids.add(value)
            if name in ("href", "src"):
                self.page.refs.append((tag, name, value))


def read_page(path: Path) -> Page:
    parser = _PageParser()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser.page


def visible_text(path: Path) -> str:
    """A built page's text as a reader sees it (tags dropped, entities decoded, spaces collapsed)."""
    import html

    text = re.sub(r"<(script|style)\b.*?</\1>", " ", path.read_text(encoding="utf-8"), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())


def github_anchor(heading: str) -> str:
    """The anchor GitHub (and MyST's myst_heading_anchors) give a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def markdown_anchors(path: Path) -> set[str]:
    """The heading anchors of a Markdown file (outside fenced code blocks)."""
    anchors, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.+)", line)):
            anchors.add(github_anchor(m.group(1)))
    return anchors

"""The docs site: builds with no warning (nitpicky), every internal link and anchor resolves, no page
loads anything from the network, and the CLI reference follows the parsers."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.site import build_site, read_page, require_sphinx

pytestmark = pytest.mark.slow  # one Sphinx build of the whole site: about 25 s (scripts/docs.sh builds it by hand)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    require_sphinx()
    build = build_site(tmp_path_factory.mktemp("docs") / "html")
    print(f"docs build: {build.seconds:.1f} s")
    assert build.returncode == 0, f"sphinx failed (warnings are errors):\n{build.log[-6000:]}"
    assert f"[docs] built {build.out} in " in build.log, build.log[-2000:]
    return build.out


def _pages(site: Path) -> dict[Path, object]:
    return {p: read_page(p) for p in site.rglob("*.html")}


def test_the_site_builds_with_no_warning_and_has_every_page(site):
    built = {p.relative_to(site).as_posix() for p in site.rglob("*.html")}
    for page in (
        "index.html",
        "getting-started.html",
        "plugins.html",
        "megatron-bridge.html",
        "controller.html",
        "on-demand.html",
        "reading-a-profile.html",
        "slurm.html",
        "scale-and-limits.html",
        "guarantees.html",
        "architecture.html",
        "contributing.html",
        "reference/api.html",
        "reference/cli.html",
    ):
        assert page in built, f"{page} was not built; built: {sorted(built)}"


def test_every_internal_link_and_anchor_resolves(site):
    pages = _pages(site)
    checked, broken = 0, []
    for path, page in pages.items():
        for tag, attr, url in page.refs:
            parts = urlsplit(url)
            if parts.scheme or url.startswith("//"):
                continue  # external (http, mailto, data): not checked here, no network
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            checked += 1
            if not target.is_file():
                broken.append(f"{path.relative_to(site)}: <{tag} {attr}={url!r}>: no file {target}")
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else read_page(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{path.relative_to(site)}: <{tag} {attr}={url!r}>: no id {parts.fragment!r}")
    assert checked > 500, f"only {checked} internal references found: is the checker reading the pages?"
    assert not broken, "\n".join(broken)


def test_no_page_loads_a_script_style_font_or_image_from_the_network(site):
    remote = []
    for path, page in _pages(site).items():
        for tag, attr, url in page.refs:
            if tag != "a" and urlsplit(url).scheme in ("http", "https", "") and url.startswith(("http", "//")):
                remote.append(f"{path.relative_to(site)}: <{tag} {attr}={url}>")
    for css in site.rglob("*.css"):
        for url in re.findall(r"url\(\s*['\"]?((?:https?:)?//[^'\")]+)", css.read_text(encoding="utf-8")):
            remote.append(f"{css.relative_to(site)}: url({url})")
    assert not remote, "\n".join(remote)


def test_the_cli_reference_has_every_subcommand_and_every_flag_of_the_parsers(site):
    import argparse

    from bridge_plugins.cli import SUBCOMMANDS
    from bridge_plugins.cli import build_parser as cli_parser
    from recipes.arguments import build_parser as main_job_parser

    text = (site / "reference" / "cli.html").read_text(encoding="utf-8")
    sub = next(a for a in cli_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == set(SUBCOMMANDS)
    flags = [opt for name in SUBCOMMANDS for a in sub.choices[name]._actions for opt in a.option_strings]
    flags += [opt for a in main_job_parser()._actions for opt in a.option_strings]
    for name in SUBCOMMANDS:
        assert re.search(rf"<h[34]>{name}\b", text), f"no section for 'bridge-plugins {name}'"
    missing = sorted({f for f in flags if f not in ("-h", "--help") and f not in text})
    assert not missing, f"flags of the parsers missing from the CLI reference: {missing}"


def test_the_cli_reference_prints_the_help_as_typed_once_and_nothing_of_the_build_machine(site):
    import html

    from tests.docs.site import visible_text

    text = visible_text(site / "reference" / "cli.html")
    assert "with --json: include" in text
    typeset = sorted(set(re.findall(r"\S*[\u2013\u2014\u2018\u2019\u201c\u201d]\S*", text)))
    assert not typeset, f"the help is typeset, not as typed (copying it would fail): {typeset}"
    assert not re.search(r"here \d+", text), "a default of the machine that built the docs"
    assert text.count(html.unescape("Read and steer the profiles")) == 1, "the intro sentence twice"


def test_the_api_reference_documents_the_public_api(site):
    text = (site / "reference" / "api.html").read_text(encoding="utf-8")
    for name in (
        "bridge_plugins.config.profiling.ProfilingConfig",
        "bridge_plugins.plugins.pytorch.PyTorchProfilerPlugin",
        "bridge_plugins.plugins.nsys.NsysPlugin",
        "bridge_plugins.plugins.fault_tolerance.FaultTolerancePlugin",
        "bridge_plugins.runtime.controller.ProfilingController",
        "bridge_plugins.analysis.pipeline.summarize",
        "bridge_plugins.analysis.page.build",
    ):
        assert f'id="{name}"' in text, f"{name} is not in the API reference"
    # a field's docstring, rendered once, from the code
    assert "0-based global iteration index, inclusive" in text


def test_docs_sh_without_the_venv_says_to_run_setup(tmp_path):
    import os
    import subprocess

    from tests.docs.site import REPO

    env = {**os.environ, "PYTHON": str(tmp_path / "no-venv" / "python"), "OUT": str(tmp_path / "html")}
    proc = subprocess.run(["bash", str(REPO / "scripts" / "docs.sh")], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert "run 'bash scripts/setup.sh' first" in proc.stderr
    assert not (tmp_path / "html").exists()

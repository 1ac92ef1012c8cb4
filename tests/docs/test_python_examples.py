"""The Python in the docs runs as printed (issue 33, point 1): every ```python block of a docs
page, and every inline call of a constructor a driver copies (`run.Script(...)`,
`NsysPlugin(...)`, `ProfilingConfig(...)`...).

The README's block is the driver's lines, checked to be ``examples/profile_tiny_gpt.py``'s by
tests/docs/test_markdown_links.py; that file runs in tests/e2e/test_main_job.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.docs.site import DOCS, REPO

BLOCK = re.compile(r"^```(?:python|\{code-block\} python)\n(?:(?::[\w-]+:[^\n]*\n)*\n?)(.*?)^```", re.M | re.S)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
CONSTRUCTORS = re.compile(
    r"(run\.(Script|Partial|Config|LocalExecutor)|NsysPlugin|PyTorchProfilerPlugin|FaultTolerancePlugin|"
    r"ProfilingConfig|tiny_gpt_recipe|tiny_gpt_script)\("
)

NEEDS_A_CLUSTER = {"scale.md": "os.makedirs("}
"""Blocks that go on to use a cluster this machine cannot have (a Slurm cluster over SSH): they run
up to that line, so what they build (executors, tunnels) is still built by the NeMo Run installed."""


def python_blocks() -> list[tuple[str, int, str]]:
    found = []
    for page in sorted(DOCS.glob("*.md")):
        for i, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8"))):
            found.append((page.name, i, code))
    return found


def inline_calls() -> list[tuple[str, str]]:
    """(page, code) for each inline code span that calls one of CONSTRUCTORS with real arguments."""
    found = []
    for page in sorted([*DOCS.glob("*.md"), REPO / "README.md"]):
        prose = FENCE.sub("", page.read_text(encoding="utf-8"))
        for span in re.findall(r"`([^`]+)`", prose):
            code = " ".join(span.split())
            if CONSTRUCTORS.match(code) and code.endswith(")") and "..." not in code:
                found.append((page.name, code))
    return found


def test_the_docs_have_python_blocks_and_inline_calls_to_check():
    pages = {page for page, _, _ in python_blocks()}
    assert {"controller.md", "megatron-bridge.md", "scale.md"} <= pages, pages
    codes = [code for _, code in inline_calls()]
    assert any(code.startswith("run.Script(") for code in codes), codes
    assert any(code.startswith("NsysPlugin(") for code in codes), codes


@pytest.mark.slow  # a Python with nemo_run or torch per block: 3-10 s each
@pytest.mark.parametrize(
    "page,index,code", python_blocks(), ids=lambda v: v if isinstance(v, str) and v.endswith(".md") else None
)
def test_every_python_block_runs_as_printed(tmp_path, page, index, code):
    stop = NEEDS_A_CLUSTER.get(page)
    if stop:
        assert stop in code, f"{page}: {stop!r} is no longer in its block: update NEEDS_A_CLUSTER"
        code = code[: code.index(stop)]
    env = {**os.environ, "PYTHONPATH": str(REPO), "NEMORUN_HOME": str(tmp_path / "nemo_run")}
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{page} block {index}:\n{code}\n--- output:\n{(proc.stdout + proc.stderr)[-3000:]}"


@pytest.mark.slow  # imports nemo_run (2-5 s)
def test_every_inline_constructor_call_builds(tmp_path, monkeypatch):
    import nemo_run as run

    import bridge_plugins
    from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script

    monkeypatch.chdir(tmp_path)
    names = {
        "run": run,
        "tiny_gpt_recipe": tiny_gpt_recipe,
        "tiny_gpt_script": tiny_gpt_script,
        **{
            n: getattr(bridge_plugins, n)
            for n in ("NsysPlugin", "PyTorchProfilerPlugin", "FaultTolerancePlugin", "ProfilingConfig")
        },
    }
    failed = []
    for page, code in inline_calls():
        try:
            eval(code, dict(names))  # noqa: S307 - the docs' own text, as a driver would run it
        except Exception as e:  # noqa: BLE001 - every failing call is listed, with its error
            failed.append(f"{page}: {code}: {type(e).__name__}: {e}")
    assert not failed, "\n".join(failed)

"""Every code block marked runnable in the docs pages runs as written and exits 0.

A page marks one with MyST's ``{code-block} bash`` and ``:class: runnable``. The blocks of a page
run in order, in one fresh directory (a later block may read what an earlier one wrote), as one
bash script with ``set -euo pipefail``; ``.venv/bin/`` is this interpreter's bin directory, and
NeMo Run's home is the test's directory (nothing is written to ~/.nemo_run). The driver script of
the plugins page is ``examples/profile_tiny_gpt.py``, included with ``literalinclude`` and run by
tests/e2e/test_main_job.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.site import DOCS, REPO

RUNNABLE = re.compile(r"^```\{code-block\} bash\n((?::[\w-]+:[^\n]*\n)*)\n?(.*?)^```", re.M | re.S)


def runnable_blocks(page: Path) -> list[str]:
    blocks = RUNNABLE.findall(page.read_text(encoding="utf-8"))
    return [body for options, body in blocks if ":class: runnable" in options.splitlines()]


PRODUCES = {
    "getting-started.md": ["profiling/torch_profile/rank0_steps3-5.pt.trace.json.gz", "report.html"],
}
"""Files a page's blocks say they write, relative to the directory they ran in."""

PAGES = sorted(p.name for p in DOCS.glob("*.md") if runnable_blocks(p))


def test_the_getting_started_and_slurm_pages_have_runnable_blocks():
    assert {"getting-started.md", "slurm.md"} <= set(PAGES), PAGES
    assert sum(len(runnable_blocks(DOCS / p)) for p in PAGES) >= 4


def test_the_plugins_page_includes_the_committed_driver_not_a_copy():
    text = (DOCS / "plugins.md").read_text(encoding="utf-8")
    assert "```{literalinclude} ../examples/profile_tiny_gpt.py" in text
    assert "```python" not in text, "the plugins page holds a copy of driver code: include examples/ instead"


@pytest.mark.integration
@pytest.mark.parametrize("page", PAGES)
def test_runnable_blocks_run(page, tmp_path):
    venv_bin = str(Path(sys.executable).parent) + "/"
    script = "set -euo pipefail\n" + "\n".join(b.replace(".venv/bin/", venv_bin) for b in runnable_blocks(DOCS / page))
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "NEMORUN_HOME": str(tmp_path / "nemo_run"),
        "PATH": venv_bin + os.pathsep + os.environ.get("PATH", ""),
    }
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, (
        f"{page}: exit {proc.returncode}\n{script}\n--- output:\n{(proc.stdout + proc.stderr)[-4000:]}"
    )
    assert "Traceback" not in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-4000:]
    missing = [name for name in PRODUCES.get(page, []) if not (tmp_path / name).is_file()]
    assert not missing, (
        f"{page}: the blocks did not write {missing}; files: {sorted(map(str, tmp_path.rglob('*')))[:50]}"
    )

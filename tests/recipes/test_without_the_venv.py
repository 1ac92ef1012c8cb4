"""``python3 -m recipes`` with a Python that lacks the project's packages (the venv not used) is one
line that says which Python to use, not an 18-line traceback (issue 33, point 8)."""

from __future__ import annotations

import subprocess
import venv

from tests.support import ROOT


def test_the_main_job_without_the_venvs_packages_says_to_use_the_venv(tmp_path):
    bare = tmp_path / "bare"
    venv.EnvBuilder(with_pip=False, system_site_packages=False).create(bare)  # a real Python, no nemo_run
    python = bare / "bin" / "python"
    assert subprocess.run([python, "-c", "import nemo_run"], capture_output=True).returncode == 1
    proc = subprocess.run(
        [python, "-m", "recipes", "--dryrun", "--base-dir", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"python -m recipes: error: No module named 'nemo_run': {python} is not the project's Python; run "
        ".venv/bin/python -m recipes (bash scripts/setup.sh makes it)"
    ], proc.stderr

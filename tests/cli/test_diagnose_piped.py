"""``bridge-plugins diagnose`` into a pipe: a "try" bullet that wraps goes on under its own text,
indented, never from column 0 mid-sentence (issue 33, point 11)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, clean_env

SHARED_TRACES = Path(os.environ.get("BRIDGE_SHARED") or ROOT.parent / "shared") / "fixtures" / "gpu-traces"


def test_a_wrapped_try_bullet_hangs_under_its_text(tmp_path):
    trace = SHARED_TRACES / "job128_rank0.json.gz"
    if not trace.is_file():
        pytest.skip(f"{trace} is missing (CI clones the repo with shared/ beside it)")
    proc = subprocess.run(
        [sys.executable, "-m", "bridge_plugins", "diagnose", str(trace)],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    advice = lines[next(i for i, line in enumerate(lines) if line.endswith(": try")) :]
    wrapped = 0
    for before, line in zip(advice, advice[1:], strict=False):
        if line.endswith(": try") or line.startswith("  - "):
            continue
        assert line.startswith("    ") and line[4] != " ", f"a bullet went on from the wrong column:\n{before}\n{line}"
        wrapped += 1
    assert wrapped >= 1, "no bullet wraps at 160 columns any more: the test checks nothing"
    assert all(len(line) <= 160 and line == line.rstrip() for line in advice)
    text = " ".join(" ".join(advice).split())
    assert "ddp.overlap_grad_reduce=True (with use_distributed_optimizer) and ddp.overlap_param_gather=True;" in text

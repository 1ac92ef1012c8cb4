"""The main job under the real Nsight Systems (Debian's 2022.4, scripts/install_nsys.sh): the
report exists, is named as docs/formats.md says, and holds the window's steps as NVTX ranges."""

from __future__ import annotations

import re
import sys

import pytest

from tests.support import REAL_NSYS, nsys_nvtx_ranges, run_job, summary_steps

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_main_job_under_real_nsys_writes_the_window_as_nvtx_ranges(tmp_path):
    if REAL_NSYS is None:
        pytest.skip("no nsys on PATH: run scripts/install_nsys.sh (Debian's Nsight Systems 2022.4)")
    proc = run_job(
        [sys.executable, "-m", "recipes", "--profiler", "nsys", "--steps", "8", "--start", "3", "--end", "6"]
        + ["--base-dir", str(tmp_path)],
        timeout=400,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (report,) = tmp_path.rglob("*.nsys-rep")
    assert report.parent.name == "nsys_profile" and re.fullmatch(r"profile_\d+\.nsys-rep", report.name), report
    assert str(report) in proc.stdout, "the main job names the report"
    # the job directory as the user has it (the .nsys-rep alone): summary lists the window's steps
    assert summary_steps(report.parent.parent) == [("nsys-rep", [3, 4, 5])]
    ranges = nsys_nvtx_ranges(report)
    texts = [text for text, _ in ranges]
    # captured by the window's NVTX range (CPU), with exactly the window's steps 3-5 inside it
    assert texts == ["bridge_plugins.window", "ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5"], ranges
    assert len({pid for _, pid in ranges}) == 1, "one profiled rank (rank 0)"
    job_log = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*.log"))
    assert "does not know --cuda-event-trace=false" in job_log, "the newer option was left out, said once"

"""On-demand profiling of a running 2-rank torchrun job: trigger it twice while it trains, and
check that both ranks captured the same steps, in separate files per trigger, that a malformed
and a stale request were ignored, and that training finished normally.

The same job on two Slurm nodes is test_slurm_on_demand.py; the helpers are tests/on_demand_support.py.
"""

from __future__ import annotations

import subprocess

import pytest

from bridge_plugins.jobdir.on_demand import POLL_ENV
from tests.on_demand_support import check_triggered_job, drive_triggers
from tests.support import ROOT, clean_env, torchrun_cmd

pytestmark = pytest.mark.integration

STEPS = 150  # the second window ends near step 100: the job must still run then
JOB = str(ROOT / "tests" / "helpers" / "on_demand_job.py")


def test_trigger_a_running_two_rank_torchrun_job(tmp_path):
    out = tmp_path / "job"
    proc = subprocess.Popen(
        torchrun_cmd(2, [JOB, str(out), str(STEPS)]),
        cwd=ROOT,
        env=clean_env(**{POLL_ENV: "0.25"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first, second = drive_triggers(out)
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output[-4000:]
    assert output.count(f"DONE {STEPS} steps") == 2, output[-4000:]  # every step ran on both ranks
    check_triggered_job(out, first, second, output)

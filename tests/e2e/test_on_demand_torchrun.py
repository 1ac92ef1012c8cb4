"""On-demand profiling of a running 2-rank torchrun job: trigger it twice while it trains, and
check that both ranks captured the same steps, in separate files per trigger, that a malformed
and a stale request were ignored, and that training finished normally.

The same job on two Slurm nodes is test_slurm_on_demand.py; the helpers are tests/on_demand_support.py.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from bridge_plugins.jobdir.on_demand import POLL_ENV
from tests.on_demand_support import check_triggered_job, drive_triggers
from tests.support import ROOT, clean_env, torchrun_cmd

pytestmark = pytest.mark.integration

STEPS = 100_000  # at most: the test stops the job (a stop file) once both triggers wrote their traces
JOB = str(ROOT / "tests" / "helpers" / "on_demand_job.py")


def test_trigger_a_running_two_rank_torchrun_job(tmp_path):
    out, stop = tmp_path / "job", tmp_path / "stop"
    proc = subprocess.Popen(
        torchrun_cmd(2, [JOB, str(out), str(STEPS), str(stop)]),
        cwd=ROOT,
        env=clean_env(**{POLL_ENV: "0.25"}),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        first, second = drive_triggers(out)
        stop.touch()
        output, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, output[-4000:]
    done = re.findall(r"rank (\d): DONE (\d+) steps", output)
    assert len(done) == 2 and done[0][1] == done[1][1], output[-4000:]  # both ranks ran every step
    check_triggered_job(out, first, second, output)

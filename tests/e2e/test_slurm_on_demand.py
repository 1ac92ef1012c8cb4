"""On-demand profiling of a job running on two Slurm nodes (scripts/slurm/up.sh --nodes 2).

The job (tests/helpers/on_demand_job.py through tests/slurm_job.py) runs as plain srun tasks,
two per node, so node ids and global ranks differ; ``bridge-plugins trigger`` runs on the
submitting host while it trains. What only several nodes show: rank 0 on n1 publishes the
progress, ranks on n2 read the same request from the shared job directory and open their
windows at the same global step, with no collective.
"""

from __future__ import annotations

import threading
from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins.jobdir import names as artifact_names
from bridge_plugins.jobdir.on_demand import POLL_ENV, read_progress
from tests.on_demand_support import check_triggered_job, drive_triggers
from tests.slurm_job import on_demand_job_recording_placement
from tests.slurm_support import (
    SACCT_FIELDS,
    assert_placement,
    job_env,
    read_placements,
    require_nodes,
    run_on_slurm,
    slurm_executor,
)

pytestmark = pytest.mark.slurm

STEPS, SLEEP_S = 100, 0.1
"""At most 10 steps/s, so the triggers' lead (1.5 s of steps at 0.25 s polls) is at most ~17 steps and
both windows end by about step 60 however fast the machine is; 10-25 s of training."""
PER_NODE = 2
WORLD = 2 * PER_NODE
FIRST_RANKS = (1, 2)  # one rank on each node, not rank 0 (the one that publishes the progress)


@pytest.fixture(autouse=True)
def home(nemo_home):
    """Every test gets an isolated NeMo Run home (tests/conftest.py)."""
    return nemo_home


class Driver(threading.Thread):
    """Runs the triggers beside the blocking submission; a daemon, so a failed job never waits for it."""

    def __init__(self, fn, *args):
        super().__init__(daemon=True)
        self.fn, self.args, self.value, self.error = fn, args, None, None
        self.start()

    def run(self):
        try:
            self.value = self.fn(*self.args)
        except BaseException as e:  # re-raised in the test's thread by result()
            self.error = e

    def result(self, timeout: float):
        self.join(timeout)
        assert not self.is_alive(), f"the triggers did not finish within {timeout} s"
        if self.error is not None:
            raise self.error
        return self.value


def test_trigger_a_job_running_on_two_nodes(slurm_cluster, tmp_path):
    nodes = require_nodes(2)[:2]
    out, records_dir = tmp_path / "job", tmp_path / "placement"
    records_dir.mkdir()
    task = run.Partial(
        on_demand_job_recording_placement,
        output_dir=str(out),
        steps=STEPS,
        sleep_s=SLEEP_S,
        record_dir=str(records_dir),
    )
    executor = slurm_executor(
        slurm_cluster,
        tmp_path,
        nodes=2,
        ntasks_per_node=PER_NODE,
        env=job_env(**{POLL_ENV: "0.25", "OMP_NUM_THREADS": "1"}),
    )  # 4 ranks on 2 cores
    driver = Driver(drive_triggers, out, FIRST_RANKS, WORLD)  # waits for the job's progress file
    ran = run_on_slurm(tmp_path, task, executor, [], name="on_demand")
    ran.assert_succeeded()
    first, second = driver.result(timeout=30)
    acct = ran.accounting()
    assert (acct["State"], acct["ExitCode"], acct["NNodes"], acct["NodeList"]) == ("COMPLETED", "0:0", "2", "n[1-2]")
    for rank in range(WORLD):  # training finished normally: every step ran on every rank
        assert ran.full_logs.count(f"rank {rank}: DONE {STEPS} steps") == 1, ran.logs
    traces = check_triggered_job(out, first, second, ran.full_logs, FIRST_RANKS, WORLD)

    records = read_placements(records_dir)
    assert_placement(records, nodes, ntasks_per_node=PER_NODE, world_size=WORLD)
    for r in records:  # each trace was written by the process its name says, on the node Slurm says
        rank = int(r["rank"])
        written = sorted(Path(a) for a in r["artifacts"] if a.endswith(artifact_names.TORCH_TRACE_SUFFIX))
        assert written == sorted(by_rank[rank] for by_rank in traces.values() if rank in by_rank), r
        assert {artifact_names.parse(p).rank for p in written} == {rank}, written
    progress = read_progress(out)
    assert (progress.host, progress.world_size, progress.poll_interval_s) == (nodes[0], WORLD, 0.25)  # rank 0, n1
    assert ran.full_logs.count("(polled every 0.25 s)") == 1, ran.logs  # rank 0 states the interval it uses
    print("sacct:", "|".join(acct[f] for f in SACCT_FIELDS.split(",")))

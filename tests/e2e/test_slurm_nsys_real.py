"""NsysPlugin under the real Nsight Systems (Debian's 2022.4) on the two-node Slurm cluster
(scripts/slurm/up.sh --nodes 2): one report per profiled rank, named with its job id, node id and
rank (docs/formats.md), holding exactly the window's steps as ``ProfilerStep#N`` NVTX ranges."""

from __future__ import annotations

import pytest

from bridge_plugins import NsysPlugin
from bridge_plugins.jobdir import names as artifact_names
from recipes.tiny_gpt import tiny_gpt_recipe
from tests.slurm_support import job_env, require_nodes, run_main_job, run_on_slurm, slurm_executor
from tests.support import REAL_NSYS, nsys_nvtx_ranges, summary_steps

pytestmark = [pytest.mark.slurm, pytest.mark.slow]

START, END, STEPS = 3, 6, 8


def test_real_nsys_one_report_per_profiled_rank_across_two_nodes(slurm_cluster, nemo_home, tmp_path):
    if REAL_NSYS is None:
        pytest.skip("no nsys: run scripts/install_nsys.sh (Debian's Nsight Systems 2022.4)")
    cluster = {**slurm_cluster, "nodes": require_nodes(2)[:2]}
    executor = slurm_executor(cluster, tmp_path, nodes=2, ntasks_per_node=1, env=job_env())
    plugin = NsysPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=[0, 1])
    recipe = tiny_gpt_recipe(train__train_iters=STEPS, model__hidden_size=32)
    ran = run_on_slurm(tmp_path, recipe, executor, [plugin])
    ran.assert_succeeded()
    # by node and rank: the file names begin with each nsys's pid, in no set order
    found = [(artifact_names.parse(p), p) for p in (ran.job_dir / artifact_names.NSYS_DIR).glob("*.nsys-rep")]
    found.sort(key=lambda named: (named[0].node, named[0].rank))
    names, reports = [n for n, _ in found], [p for _, p in found]
    assert [(n.kind, n.job_id, n.node, n.rank) for n in names] == [
        ("nsys_report", ran.slurm_id, 0, 0),
        ("nsys_report", ran.slurm_id, 1, 1),
    ], reports
    # summary on the job directory (the two .nsys-rep alone) lists each report's window steps
    assert summary_steps(ran.job_dir) == [("nsys-rep", list(range(START, END)))] * 2
    window = [f"ProfilerStep#{s}" for s in range(START, END)]
    for report in reports:
        assert [text for text, _ in nsys_nvtx_ranges(report)] == ["bridge_plugins.window", *window], report
    assert "does not know --cuda-event-trace=false" in ran.full_logs, ran.logs


def test_the_main_job_on_slurm_under_real_nsys_then_summary_lists_its_steps(slurm_cluster, tmp_path):
    """``python -m recipes --executor slurm --profiler nsys``, as a user types it: the job runs
    under the real nsys on the cluster, and ``summary`` on its job directory reads the report."""
    if REAL_NSYS is None:
        pytest.skip("no nsys: run scripts/install_nsys.sh (Debian's Nsight Systems 2022.4)")
    window = ["--steps", str(STEPS), "--start", str(START), "--end", str(END)]
    _, job_dir = run_main_job(slurm_cluster, tmp_path, "--profiler", "nsys", *window)
    assert len(list((job_dir / artifact_names.NSYS_DIR).glob("*.nsys-rep"))) == 1, "one report: rank 0's"
    assert summary_steps(job_dir) == [("nsys-rep", list(range(START, END)))]

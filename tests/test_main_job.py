"""The main job, `python -m recipes`, as a user runs it (real NeMo Run, real torchrun ranks)."""

from __future__ import annotations

import sys

import pytest

from tests.support import run_job, trace_files, trace_steps

pytestmark = pytest.mark.integration


def recipes(*args):
    return [sys.executable, "-m", "recipes", *args]


def test_main_job_profiles_the_window_on_two_local_ranks(tmp_path):
    proc = run_job(recipes("--steps", "8", "--start", "3", "--end", "6", "--ranks", "0,1", "--base-dir", str(tmp_path)))
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-4000:]
    assert "Steps captured per rank: rank 0: 3-5, rank 1: 3-5" in out
    assert "| loss" in out, "progress lines from the running job"
    assert "Top operators by self time" in out and "aten::" in out
    assert "ui.perfetto.dev" in out and "tensorboard --logdir" in out
    job_dirs = list((tmp_path / "experiments" / "tiny_gpt_profiling").glob("*/tiny_gpt"))
    assert len(job_dirs) == 1
    files = trace_files(job_dirs[0])
    assert sorted(files) == [0, 1]
    for rank, paths in files.items():
        assert [p.name for p in paths] == [f"rank{rank}_steps3-5.pt.trace.json.gz"]
        assert trace_steps(paths[0]) == {3, 4, 5}
        assert f"rank {rank}: {paths[0]}" in out


def test_nsys_without_an_nsys_binary_fails_before_launch_and_points_to_dryrun(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--base-dir", str(tmp_path)), PATH="/usr/bin:/bin")
    assert proc.returncode == 2
    assert "'nsys' binary on PATH" in proc.stderr and "--dryrun" in proc.stderr
    assert not (tmp_path / "experiments").exists(), "nothing was launched or written"


def test_dryrun_prints_the_local_nsys_launch_command(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--dryrun", "--start", "4", "--end", "7", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(l.strip() for l in proc.stdout.splitlines() if l.strip().startswith("nsys profile"))
    assert " torchrun " in line and "--nproc-per-node 2" in line
    assert "--capture-range=cudaProfilerApi" in line
    assert f"-o {tmp_path}/experiments/tiny_gpt_profiling/" in line and "/tiny_gpt/nsys_profile/profile_%p" in line
    assert "'use_nsys_profiler': True" in proc.stdout and "'profile_step_start': 4" in proc.stdout
    assert "'record_memory_history': False" in proc.stdout


def test_dryrun_nsys_with_memory_history_keeps_it_in_the_job_config(tmp_path):
    proc = run_job(recipes("--profiler", "nsys", "--memory-history", "--dryrun", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "'use_nsys_profiler': True" in proc.stdout and "'record_memory_history': True" in proc.stdout


def test_dryrun_prints_the_sbatch_script(tmp_path):
    proc = run_job(recipes("--dryrun", "--executor", "slurm", "--account", "acct1", "--partition", "part1", "--base-dir", str(tmp_path)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "sbatch script:" in proc.stdout
    assert "#SBATCH --account=acct1" in proc.stdout and "#SBATCH --partition=part1" in proc.stdout
    script = proc.stdout.split("sbatch script:", 1)[1].split("job's profiling config:", 1)[0]
    assert "torchrun" in script and "nsys profile" not in script


@pytest.mark.parametrize(
    "args,words",
    [
        (["--start", "10", "--end", "30"], ["runs past the last step (19)"]),
        (["--ranks", "0,x"], ["--ranks"]),
        (["--executor", "slurm"], ["--account and --partition"]),
        (["--start", "5", "--end", "5", "--steps", "8"], ["profile_step_end=5", "at least 6"]),
        (["--profiler", "none", "--memory-history"], ["--memory-history needs a window"]),
    ],
)
def test_bad_options_fail_before_anything_runs(tmp_path, args, words):
    proc = run_job(recipes(*args, "--base-dir", str(tmp_path)), BRIDGE_SLURM_ACCOUNT="", BRIDGE_SLURM_PARTITION="")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for w in words:
        assert w in proc.stderr
    assert not (tmp_path / "experiments").exists()

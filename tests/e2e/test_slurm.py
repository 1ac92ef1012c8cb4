"""Real jobs on the local Slurm cluster (scripts/slurm/up.sh) through NeMo Run's SlurmExecutor.

Every job is submitted with ``sbatch`` through ``run.LocalTunnel`` and must reach SUCCEEDED in
NeMo Run and ``COMPLETED|0:0`` in ``sacct``. The checks read what the job really left behind:
per-rank traces (exact window steps, one file per rank, none overwritten), the argv the stand-in
``nsys`` (tests/helpers/fake_nsys) recorded per task, and the args a ``run.Script`` received.
"""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, NsysPlugin, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.slurm_support import job_env, run_main_job, run_on_slurm, slurm_executor
from tests.support import ROOT, assert_window_traces, stand_in_nsys

pytestmark = [pytest.mark.slurm, pytest.mark.usefixtures("nemo_home")]  # isolated NeMo Run home (conftest.py)

START, END, STEPS = 3, 6, 8
RANKS = [0, 1]
SMALL = dict(train__train_iters=STEPS, model__hidden_size=32)
SMALL_ARGS = [f"train.train_iters={STEPS}", "model.hidden_size=32"]


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def assert_window(output_dir: Path) -> None:
    assert_window_traces(output_dir, RANKS, START, END)


def pytorch_plugin(**kw) -> PyTorchProfilerPlugin:
    return PyTorchProfilerPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=RANKS, **kw)


# --------------------------------------------------------------------------------------------
# run.Partial + PyTorchProfilerPlugin
# --------------------------------------------------------------------------------------------


def test_partial_two_slurm_tasks_without_launcher(slurm_cluster, tmp_path):
    ran = run_on_slurm(
        tmp_path,
        tiny_gpt_recipe(**SMALL),
        slurm_executor(slurm_cluster, tmp_path, ntasks_per_node=2),
        [pytorch_plugin()],
    )
    ran.assert_succeeded()
    # Two Slurm tasks, one process group built from SLURM_PROCID/SLURM_STEP_NUM_TASKS.
    assert "training 8 steps on 2 rank(s)" in ran.full_logs, ran.logs
    assert_window(ran.job_dir)


def test_partial_torchrun_two_ranks_in_one_task(slurm_cluster, tmp_path):
    ran = run_on_slurm(
        tmp_path,
        tiny_gpt_recipe(**SMALL),
        slurm_executor(slurm_cluster, tmp_path, ntasks_per_node=2, launcher=run.Torchrun()),
        [pytorch_plugin()],
    )
    ran.assert_succeeded()
    text = ran.sbatch_text()
    assert "torchrun" in text and "--ntasks-per-node=1" in text, text
    assert "training 8 steps on 2 rank(s)" in ran.full_logs, ran.logs
    assert_window(ran.job_dir)


# --------------------------------------------------------------------------------------------
# run.Script + PyTorchProfilerPlugin: the overrides survive the sbatch script's unquoted join
# --------------------------------------------------------------------------------------------

AWKWARD = "snaps dir; x/mem snap $HOME 'q' \"dq\".pickle"

# Records exactly what the job's argv was and what the override parser made of it, then trains.
PROBE = textwrap.dedent(
    """
    import json, os, sys
    from recipes.overrides import parse_overrides
    from recipes.train import main
    rank = os.environ.get("RANK", os.environ.get("SLURM_PROCID", "0"))
    cfg = parse_overrides(sys.argv[1:]).profiling
    with open(os.path.join(sys.argv[0] + ".d", f"argv.{rank}.{os.getpid()}.json"), "w") as f:
        json.dump({"argv": sys.argv[1:], "memory_snapshot_path": cfg.memory_snapshot_path,
                   "output_dir": cfg.output_dir, "profile_ranks": cfg.profile_ranks,
                   "output_dir_env": os.environ.get("BRIDGE_PLUGINS_OUTPUT_DIR")}, f)
    sys.exit(main(sys.argv[1:]))
    """
)


def test_script_overrides_survive_sbatch_srun_tasks(slurm_cluster, tmp_path):
    """Two plain Slurm tasks run a probe that records its argv and the parsed value, then trains."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    records = tmp_path / "probe.py.d"
    records.mkdir()
    task = run.Script(path=str(probe), args=list(SMALL_ARGS), entrypoint="python")
    executor = slurm_executor(slurm_cluster, tmp_path, ntasks_per_node=2)
    ran = run_on_slurm(
        tmp_path, task, executor, [pytorch_plugin(record_memory_history=True, memory_snapshot_path=AWKWARD)]
    )
    ran.assert_succeeded()
    # The value is in the script text, encoded (it is joined into a bash line unquoted by NeMo Run).
    assert "snap" in ran.sbatch_text() and AWKWARD not in ran.sbatch_text()
    seen = [json.loads(p.read_text()) for p in sorted(records.glob("argv.*.json"))]
    assert len(seen) == 2, seen  # both ranks ran the probe
    for rec in seen:
        assert rec["memory_snapshot_path"] == AWKWARD, rec
        assert f"profiling.memory_snapshot_path={json.dumps(AWKWARD)}" in rec["argv"], rec["argv"]
        assert rec["profile_ranks"] == RANKS, rec
        # the job dir comes in the environment, not as an override (Megatron Bridge's parser rejects one)
        assert rec["output_dir"] is None and rec["output_dir_env"] == str(ran.job_dir), rec
    # On CPU no snapshot is written; the job says so and trains on.
    assert "record_memory_history requested but CUDA is not available" in ran.full_logs, ran.logs
    assert_window(ran.job_dir)


def test_script_python_m_recipes_train_under_torchrun(slurm_cluster, tmp_path):
    """The real `python -m recipes.train` as a run.Script, torchrun ranks, the awkward path."""
    executor = slurm_executor(slurm_cluster, tmp_path, ntasks_per_node=2, launcher=run.Torchrun())
    ran = run_on_slurm(
        tmp_path,
        tiny_gpt_script(*SMALL_ARGS),
        executor,
        [pytorch_plugin(record_memory_history=True, memory_snapshot_path=AWKWARD)],
    )
    ran.assert_succeeded()
    text = ran.sbatch_text()
    assert "-m recipes.train" in text and "torchrun" in text, text
    # each selected rank logs where its snapshot goes (on CPU: would have gone): the value arrived intact through bash
    for rank in RANKS:
        path = f"{ran.job_dir}/snaps dir; x/mem snap $HOME 'q' \"dq\"_{rank}.pickle"
        lines = [line for line in ran.full_logs.splitlines() if f"rank {rank}: " in line]
        assert any(f"go to {path}" in line or f"would have gone to {path};" in line for line in lines), ran.logs
    assert_window(ran.job_dir)


# --------------------------------------------------------------------------------------------
# NsysPlugin with the stand-in nsys
# --------------------------------------------------------------------------------------------


def test_nsys_one_report_per_slurm_task(slurm_cluster, tmp_path):
    bin_dir, nsys_log = stand_in_nsys(tmp_path)
    executor = slurm_executor(
        slurm_cluster, tmp_path, ntasks_per_node=2, env=job_env(path_prefix=bin_dir, FAKE_NSYS_LOG=str(nsys_log))
    )
    plugin = NsysPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=RANKS)
    ran = run_on_slurm(tmp_path, tiny_gpt_recipe(**SMALL), executor, [plugin])
    ran.assert_succeeded()

    records = [json.loads(p.read_text()) for p in sorted(nsys_log.glob("nsys.*.json"))]
    assert len(records) == 2, records  # no launcher: one nsys per Slurm task
    report_dir = ran.job_dir / "nsys_profile"
    outputs = []
    for rec in records:
        opts = rec["options"]
        o = opts[opts.index("-o") + 1]
        # Slurm passed the placeholders literally; nsys (here: the stand-in) expands them per task.
        assert o.startswith(f"{report_dir}/"), o
        for var in ("SLURM_JOB_ID", "SLURM_NODEID", "SLURM_PROCID"):
            assert f"%q{{{var}}}" in o, o
        assert "%p" in o, o
        assert rec["command"][:3] == ["python", "-m", "nemo_run.core.runners.fdl_runner"], rec["command"]
        outputs.append(rec["output"])
    assert len(set(outputs)) == 2, outputs
    expected = {f"{report_dir}/profile_{{pid}}_{ran.slurm_id}_node0_rank{r}" for r in RANKS}
    assert {re.sub(r"profile_\d+_", "profile_{pid}_", o) for o in outputs} == expected, outputs
    reports = sorted(report_dir.glob("*.nsys-rep"))
    assert sorted(str(p) for p in reports) == sorted(o + ".nsys-rep" for o in outputs)
    # On CPU the job skips cudaProfilerStart/Stop but still runs the window on both ranks.
    assert "nsys profiling but CUDA is not available" in ran.full_logs, ran.logs
    assert "training 8 steps on 2 rank(s)" in ran.full_logs, ran.logs


# --------------------------------------------------------------------------------------------
# FaultTolerancePlugin + NsysPlugin: a valid sbatch script without nsys, in either order
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("order", ["ft_then_nsys", "nsys_then_ft"])
def test_fault_tolerance_with_nsys_renders_valid_sbatch_without_nsys(slurm_cluster, tmp_path, order):
    ft = FaultTolerancePlugin()
    nsys = NsysPlugin(profile_step_start=START, profile_step_end=END, profile_ranks=RANKS)
    plugins = [ft, nsys] if order == "ft_then_nsys" else [nsys, ft]
    executor = slurm_executor(slurm_cluster, tmp_path, ntasks_per_node=2)
    with (
        pytest.warns(ProfilingPluginWarning, match="nsys"),
        run.Experiment("fttest", base_dir=str(tmp_path), enable_goodbye_message=False, log_level="WARN") as exp,
    ):
        exp.add(tiny_gpt_recipe(**SMALL), executor=executor, plugins=plugins, name="tiny_gpt")
        exp.dryrun(log=False, delete_exp_dir=False)
    job = exp.jobs[0]
    script = Path(job.executor.experiment_dir, f"{job.executor.job_name}_sbatch.sh")
    text = script.read_text()
    (srun,) = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    assert " --kill-on-bad-exit=1 ft_launcher " in srun, srun
    # (the tmp dir's name holds 'nsys', and so may the checkout's: /work/wt-nsys-run)
    assert "nsys" not in text.replace(str(tmp_path), "<tmp>").replace(str(ROOT), "<repo>"), text
    assert not (Path(job.executor.job_dir) / "nsys_profile").exists()
    assert "--ntasks-per-node=1" in text, text  # FT, like torchrun, runs one task per node
    proc = subprocess.run(
        ["sbatch", "--test-only", str(script)], capture_output=True, text=True, timeout=30, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "to start at" in proc.stdout + proc.stderr, proc.stdout + proc.stderr


# --------------------------------------------------------------------------------------------
# The main job
# --------------------------------------------------------------------------------------------


def test_main_job_on_slurm(slurm_cluster, tmp_path):
    window = ["--steps", str(STEPS), "--start", str(START), "--end", str(END), "--ranks", "0,1"]
    stdout, job_dir = run_main_job(slurm_cluster, tmp_path, *window, timeout=180)
    assert "Steps captured per rank: rank 0: 3-5, rank 1: 3-5" in stdout, stdout[-4000:]
    assert_window(job_dir)

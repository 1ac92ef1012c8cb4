"""End to end: real NeMo Run experiments on LocalExecutor, real torchrun ranks, the real job.

Each test launches an experiment through ``exp.run`` and checks what the job left in its job
directory: PyTorch traces holding exactly the requested steps on exactly the requested ranks, or
(with a stand-in ``nsys`` on PATH, tests/helpers/fake_nsys) the nsys command line and report
location. Jobs are spawned with a clean environment: the venv's bin first on PATH (NeMo Run
resolves ``python``/``torchrun`` from PATH), the repo on PYTHONPATH, and no inherited
RANK/MASTER_* variables (a nested job would join an outer rendezvous). LocalExecutor+torchrun
uses ``--rdzv-endpoint localhost:0`` on one node, so concurrent runs pick free ports.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nemo_run as run
import pytest
from torchx.specs import AppState

from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.support import NSYS_DEFAULTS, ROOT, assert_window_traces, job_logs, stand_in_nsys, use_clean_env

pytestmark = pytest.mark.integration

SMALL = ("train.train_iters=8", "model.hidden_size=32", "train.log_interval=4")


@pytest.fixture(autouse=True)
def job_env(nemo_home, monkeypatch):
    """Isolated NeMo Run home (tests/conftest.py) and a clean environment for the jobs NeMo Run spawns."""
    use_clean_env(monkeypatch)
    monkeypatch.chdir(ROOT)


def small_recipe():
    return tiny_gpt_recipe(train__train_iters=8, model__hidden_size=32, train__log_interval=4)


def run_experiment(task, executor, plugins):
    with run.Experiment("e2e", log_level="WARN") as exp:
        exp.add(task, executor=executor, plugins=plugins, name="job")
        exp.run(detach=False)
    job = exp.jobs[0]
    assert job.state == AppState.SUCCEEDED, f"job {job.state}:\n{job_logs(job.executor.job_dir)[-4000:]}"
    return exp, job, Path(job.executor.job_dir)


def torchrun_executor():
    return run.LocalExecutor(ntasks_per_node=2, launcher="torchrun")


def window_plugin(ranks, **kw):
    # Start 3 is not a multiple of the window length 3: torch.profiler's schedule must not be
    # what decides the window's first step.
    return PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=6, profile_ranks=ranks, **kw)


def assert_traces(output_dir: Path, ranks):
    assert_window_traces(output_dir, ranks, 3, 6)


def test_partial_torchrun_two_ranks_exact_steps_and_from_id():
    plugin = window_plugin([0, 1])
    exp, job, job_dir = run_experiment(small_recipe(), torchrun_executor(), [plugin])
    assert_traces(job_dir, [0, 1])
    back = run.Experiment.from_title("e2e")
    (restored,) = back.jobs
    assert type(restored.plugins[0]) is PyTorchProfilerPlugin
    assert restored.plugins[0].profile_ranks == [0, 1] and restored.handle == exp.jobs[0].handle


def test_partial_torchrun_unselected_rank_writes_nothing():
    _, _, job_dir = run_experiment(small_recipe(), torchrun_executor(), [window_plugin([1])])
    assert_traces(job_dir, [1])
    assert not list(job_dir.rglob("rank0_*"))


# NeMo Run's torchrun component shlex-quotes Script args and LocalExecutor runs them without a shell,
# so 'profiling.profile_ranks=[0,1]' arrives with its quotes; recipes/overrides.py unquotes it once.
def test_script_torchrun_two_ranks_exact_steps():
    _, _, job_dir = run_experiment(tiny_gpt_script(*SMALL), torchrun_executor(), [window_plugin([0, 1])])
    assert_traces(job_dir, [0, 1])


def test_script_local_awkward_output_dir_arrives_intact(tmp_path):
    """No launcher: LocalExecutor hands the args to the process directly (no shell)."""
    out = tmp_path / "my run" / "out;1 $HOME 'q'"
    _, _, job_dir = run_experiment(
        tiny_gpt_script(*SMALL), run.LocalExecutor(), [window_plugin([0], output_dir=str(out))]
    )
    assert_traces(out, [0])
    assert not (job_dir / "torch_profile").exists()


def test_nsys_chain_with_stand_in_nsys(tmp_path, monkeypatch):
    bindir, log = stand_in_nsys(tmp_path)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(log))
    # NeMo Run's options as they are (the CPU plan: tests/runtime/test_nsys_launch.py)
    monkeypatch.setenv("BRIDGE_PLUGINS_NSYS_GPU", "1")
    plugin = NsysPlugin(profile_step_start=2, profile_step_end=4, profile_ranks=[0], nsys_trace=["nvtx", "cuda"])
    _, job, job_dir = run_experiment(small_recipe(), torchrun_executor(), [plugin])

    (record_file,) = log.iterdir()
    record = json.loads(record_file.read_text())
    pid = record_file.name.split(".")[1]
    assert record["options"] == [
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        f"{job_dir}/nsys_profile/profile_%p",
        *NSYS_DEFAULTS,
    ]
    cmd = record["command"]
    assert cmd[0] == "torchrun" and cmd[cmd.index("--nproc-per-node") + 1] == "2"
    # LocalExecutor appends an empty argument after the command when nsys is on.
    assert cmd[-6:] == [
        "-m",
        "nemo_run.core.runners.fdl_runner",
        "-n",
        "job",
        f"{job_dir}/configs/job_fn_or_script",
        "",
    ]
    assert (job_dir / "nsys_profile" / f"profile_{pid}.nsys-rep").is_file()
    # The job itself read use_nsys_profiler from the packaged config (CPU: it says it skips CUDA capture).
    assert "nsys profiling but CUDA is not available" in job_logs(job_dir)
    assert not (job_dir / "torch_profile").exists()


def test_script_local_output_dir_with_macros_and_interpolation_arrives_intact(tmp_path):
    """NeMo Run's macro substitution ($$, ${img_root}) and OmegaConf's interpolation (${HOME},
    ${train.seed}) must leave the path alone: the traces land in exactly the directory given."""
    out = tmp_path / "o $$ ${img_root} ${replica_id} ${HOME} ${train.seed}"
    _, _, job_dir = run_experiment(
        tiny_gpt_script(*SMALL), run.LocalExecutor(), [window_plugin([0], output_dir=str(out))]
    )
    assert_traces(out, [0])
    assert not (job_dir / "torch_profile").exists()

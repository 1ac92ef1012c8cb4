"""What our plugins send to a run.Script is what Megatron Bridge's send, and it arrives as written.

The expected lists are what Megatron Bridge 0.6.2's default converters
(``megatron/bridge/recipes/run_plugins.py``) write for these settings; tests/plugins/
test_mb_real_package.py checks the same against the real package. "Arrives" is the job's sys.argv,
followed through each executor's real stages (tests/plugins/job_argv.py).
"""

from __future__ import annotations

import os

import nemo_run as run
import pytest

from bridge_plugins.plugins import NsysPlugin, PyTorchProfilerPlugin
from recipes.overrides import parse_overrides
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import dryrun, local_argv, slurm
from tests.plugins.job_argv import job_argv

pytestmark = pytest.mark.usefixtures("nemo_home")

MB_NSYS = [
    "profiling.use_nsys_profiler=true",
    "profiling.profile_step_start=3",
    "profiling.profile_step_end=5",
    "profiling.profile_ranks=[0,1]",
    "profiling.record_shapes=false",
]
MB_PYTORCH = [
    "profiling.use_pytorch_profiler=true",
    "profiling.profile_step_start=3",
    "profiling.profile_step_end=5",
    "profiling.profile_ranks=[0,1]",
    "profiling.record_memory_history=true",
    "profiling.memory_snapshot_path=snapshot.pickle",
    "profiling.record_shapes=false",
]
EXECUTORS = {
    "local": lambda: run.LocalExecutor(),
    "local-torchrun": lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
    "slurm": lambda: slurm(),
    "slurm-torchrun": lambda: slurm(launcher="torchrun"),
    "docker": lambda: run.DockerExecutor(container_image="img"),
    "docker-torchrun": lambda: run.DockerExecutor(container_image="img", launcher="torchrun"),
}


def nsys():
    return NsysPlugin(profile_step_start=3, profile_step_end=5, profile_ranks=[0, 1])


def pytorch(**kw):
    kw = {"record_memory_history": True, "memory_snapshot_path": "snapshot.pickle", **kw}
    return PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=5, profile_ranks=[0, 1], **kw)


@pytest.fixture
def nsys_on_path(tmp_path, monkeypatch):
    """A LocalExecutor job with nsys must find it at exp.run (dry runs too); the stand-in is enough."""
    from tests.support import FAKE_NSYS

    bindir = tmp_path / "nsysbin"
    bindir.mkdir()
    (bindir / "nsys").symlink_to(FAKE_NSYS)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


CASES = [(n, p, e) for n in EXECUTORS for p, e in [(nsys, MB_NSYS), (pytorch, MB_PYTORCH)]]


# Docker with nsys is left out: the stand-in nsys would write its report to /nemo_run, which exists
# only inside the container; the args take the same path as with the PyTorch profiler.
@pytest.mark.parametrize(
    "name, plugin, expected",
    [c for c in CASES if not (c[0].startswith("docker") and c[1] is nsys)],
    ids=[f"{n}-{p.__name__}" for n, p, _ in CASES if not (n.startswith("docker") and p is nsys)],
)
def test_only_megatron_bridge_fields_set_job_receives_its_bytes(name, plugin, expected, tmp_path, nsys_on_path):
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), EXECUTORS[name](), [plugin()])
    # exactly: on LocalExecutor, not even the empty arg NeMo Run appends after nsys is left
    assert job_argv(exp.jobs[0], tmp_path) == ["train.train_iters=8", *expected]


def test_own_key_sent_only_when_set_to_non_default(tmp_path):
    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(), [pytorch(with_stack=True, background_export=True)])
    received = job_argv(exp.jobs[0], tmp_path)
    assert received == [*MB_PYTORCH, "profiling.pytorch_profiler_with_stack=true"]
    cfg = parse_overrides(received)
    assert cfg.profiling.pytorch_profiler_with_stack is True and cfg.profiling.background_export is True


def test_job_dir_reaches_our_job_by_environment_not_by_argv(tmp_path):
    exp = dryrun(tiny_gpt_script(), slurm(), [pytorch()])
    job = exp.jobs[0]
    assert not any("output_dir" in a for a in job_argv(job, tmp_path))
    from tests.launch_support import sbatch

    assert f"export BRIDGE_PLUGINS_OUTPUT_DIR={job.executor.job_dir}" in sbatch(job).splitlines()


def test_output_dir_env_is_shell_quoted_where_a_shell_reads_it(tmp_path):
    from bridge_plugins.plugins.executor_traits import env_value

    assert env_value(slurm(), "/a b/$x") == "'/a b/$x'"
    assert env_value(run.LocalExecutor(), "/a b/$x") == "/a b/$x"


def test_local_torchrun_job_receives_args_unquoted(tmp_path):
    exp = dryrun(tiny_gpt_script("train.train_iters=8"), EXECUTORS["local-torchrun"](), [pytorch()])
    assert "'profiling.profile_ranks=[0,1]'" not in job_argv(exp.jobs[0], tmp_path)
    assert "profiling.profile_ranks=[0,1]" in job_argv(exp.jobs[0], tmp_path)


def test_megatron_bridge_names_import_from_ours():
    from bridge_plugins.plugins import (  # noqa: F401
        FaultTolerancePluginScriptArgs,
        NsysPluginScriptArgs,
        PyTorchProfilerPluginScriptArgs,
        _default_fault_tolerance_converter,
        _default_nsys_converter,
        _default_pytorch_profiler_converter,
    )

    args = NsysPluginScriptArgs(profile_step_start=3, profile_step_end=5, profile_ranks=[0, 1], record_shapes=False)
    assert _default_nsys_converter(args) == MB_NSYS
    ft = FaultTolerancePluginScriptArgs(enable_ft_package=True, calc_ft_timeouts=False)
    assert _default_fault_tolerance_converter(ft) == ["ft.enable_ft_package=true", "ft.calc_ft_timeouts=false"]
    pt = PyTorchProfilerPluginScriptArgs(
        profile_step_start=3,
        profile_step_end=5,
        profile_ranks=[0, 1],
        record_memory_history=True,
        memory_snapshot_path="snapshot.pickle",
        record_shapes=False,
    )
    assert _default_pytorch_profiler_converter(pt) == MB_PYTORCH


def test_nsys_trace_none_means_megatron_bridges_default(tmp_path):
    from tests.launch_support import assigned

    plugin = NsysPlugin(profile_step_start=3, profile_step_end=5, nsys_trace=None)
    assert plugin.nsys_trace is None  # Megatron Bridge's default value, kept as given
    executor = assigned(slurm(), tmp_path)
    plugin.setup(tiny_gpt_script(), executor)
    assert executor.get_launcher().nsys_trace == ["nvtx", "cuda"]
    assert NsysPlugin(profile_step_start=3, profile_step_end=5).nsys_trace is None


def test_local_argv_helper_is_what_popen_gets():
    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(), [pytorch()])
    assert local_argv(exp.jobs[0])[:3] == ["python", "-m", "recipes.train"]

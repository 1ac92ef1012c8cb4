"""Per-executor facts and refusals by their whole lines (nothing is launched): a Slurm job group
sees /nemo_run when any of its resource groups has a container image; a converter's output and an
arg the executor's quoting cannot carry are refused naming the plugin."""

from __future__ import annotations

import nemo_run as run
import pytest

from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin
from bridge_plugins.config.profiling import OUTPUT_DIR_ENV
from bridge_plugins.plugins.executor_traits import CONTAINER_JOB_DIR, _slurm_has_container, job_dir_seen_by_job
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import assigned, slurm

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_a_job_group_with_an_image_in_a_later_resource_group_runs_in_a_container():
    group = run.SlurmExecutor.merge([slurm(), slurm(container_image="img")], num_tasks=2)
    assert (group.run_as_group, group.container_image) == (True, None)
    assert _slurm_has_container(group) is True and job_dir_seen_by_job(group) == CONTAINER_JOB_DIR


def test_a_job_group_without_images_runs_on_the_host(tmp_path):
    group = assigned(run.SlurmExecutor.merge([slurm()], num_tasks=1), tmp_path)
    assert (group.run_as_group, group.resource_group) == (True, [])
    assert _slurm_has_container(group) is False and job_dir_seen_by_job(group) != CONTAINER_JOB_DIR


def not_a_list_converter(args) -> list[str]:
    """A module-level converter that returns a str."""
    return "profiling.use_pytorch_profiler=true"  # type: ignore[return-value]


def test_a_converter_that_returns_no_list_is_refused_naming_the_plugin(tmp_path):
    plugin = PyTorchProfilerPlugin(script_args_converter_fn=not_a_list_converter)
    with pytest.raises(TypeError) as raised:
        plugin.setup(tiny_gpt_script(), assigned(run.LocalExecutor(), tmp_path))
    assert str(raised.value) == (
        "PyTorchProfilerPlugin.script_args_converter_fn must return a list of str, got "
        "'profiling.use_pytorch_profiler=true'"
    )


def test_a_value_docker_with_torchrun_cannot_carry_is_refused_naming_the_plugin(tmp_path):
    task = tiny_gpt_script()
    executor = assigned(run.DockerExecutor(container_image="img", launcher="torchrun"), tmp_path)
    with pytest.raises(ValueError) as raised:
        PyTorchProfilerPlugin(output_dir="/it's").setup(task, executor)
    assert str(raised.value).startswith("PyTorchProfilerPlugin: script arg ")
    assert str(raised.value).endswith(
        "contains a single quote; NeMo Run's launcher quoting breaks it on this executor (Docker, or Slurm with "
        "nsys GPU metrics, with torchrun)"
    )
    assert task.args == []


def test_a_slurm_job_sees_its_job_dir_under_the_tunnels(tmp_path):
    executor = assigned(slurm(tunnel=run.SSHTunnel(host="cluster", user="me", job_dir="/remote/jobs")), tmp_path)
    assert executor.tunnel.job_dir.startswith("/remote/jobs")
    assert job_dir_seen_by_job(executor) == f"{executor.tunnel.job_dir}/job"
    executor.tunnel = None  # no tunnel at all: the executor's own job dir
    assert job_dir_seen_by_job(executor) == executor.job_dir == str(tmp_path / "exp" / "job")


@pytest.mark.parametrize(("output_dir", "env"), [(None, True), ("/out", False)])
def test_the_job_dir_default_travels_in_the_environment_only_when_no_output_dir_is_asked(output_dir, env, tmp_path):
    executor = assigned(run.LocalExecutor(), tmp_path)
    PyTorchProfilerPlugin(output_dir=output_dir).setup(tiny_gpt_script(), executor)
    assert (OUTPUT_DIR_ENV in executor.env_vars) is env


def test_a_users_arg_the_gpu_metrics_wrapper_cannot_carry_is_refused_naming_the_plugin(tmp_path):
    task = tiny_gpt_script("note=it's")
    with pytest.raises(ValueError) as raised:
        NsysPlugin(nsys_gpu_metrics=True).setup(task, assigned(slurm(), tmp_path))
    assert str(raised.value) == (
        "NsysPlugin: the task's arg \"note=it's\" cannot be re-quoted for the new launcher (it is not what NeMo "
        "Run's quoting on this executor produces); remove or simplify it"
    )


def test_the_job_dir_default_stays_out_of_the_environment_when_the_script_sets_its_own_output_dir(tmp_path):
    executor = assigned(run.LocalExecutor(), tmp_path)
    task = tiny_gpt_script("profiling.output_dir=/mine")
    PyTorchProfilerPlugin().setup(task, executor)
    assert OUTPUT_DIR_ENV not in executor.env_vars
    assert "profiling.output_dir=/mine" in task.args

"""run.Partial tasks: the ProfilingConfig the plugins write into the recipe's ConfigContainer,
as NeMo Run packages it, and the launch command that goes with it (LocalExecutor)."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import fiddle as fdl
import nemo_run as run
import pytest
from nemo_run.config import get_nemorun_home

from bridge_plugins import FaultTolerancePlugin, ProfilingConfig, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from recipes.config import ConfigContainer
from recipes.tiny_gpt import tiny_gpt_recipe
from tests.launch_support import (
    FDL_RUNNER,
    LOCAL_NSYS_WRAPPER,
    ForeignContainer,
    ForeignFT,
    ForeignProfilingConfig,
    assigned,
    dryrun,
    foreign_pretrain,
    local_argv,
    no_warnings,
    packaged_profiling,
    user_nsys_plugin,
)
from tests.support import NSYS_DEFAULTS, stand_in_nsys

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_local_torchrun_partial_nsys_exact_command_and_config(tmp_path, monkeypatch):
    bindir, _ = stand_in_nsys(tmp_path)  # LocalExecutor: without an nsys on PATH the plugin warns
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    with no_warnings():
        exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [user_nsys_plugin()])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job) == [
        LOCAL_NSYS_WRAPPER,
        "profile",
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        f"{jd}/nsys_profile/profile_%p",
        *NSYS_DEFAULTS,
        "torchrun",
        "--rdzv-backend",
        "c10d",
        "--rdzv-endpoint",
        "localhost:0",
        "--rdzv-id",
        "<ID>",
        "--nnodes",
        "1",
        "--nproc-per-node",
        "2",
        "--node-rank",
        "0",
        "--tee",
        "3",
        *FDL_RUNNER,
        f"{jd}/configs/job_fn_or_script",
        "",
    ]
    assert packaged_profiling(job) == ProfilingConfig(
        use_nsys_profiler=True, profile_step_start=10, profile_step_end=15, profile_ranks=[0, 1], output_dir=jd
    )
    assert os.path.isdir(f"{jd}/nsys_profile")


def test_local_no_launcher_partial_nsys_exact_command():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [user_nsys_plugin(profile_ranks=None)])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job) == [
        LOCAL_NSYS_WRAPPER,
        "profile",
        "-s",
        "none",
        "-t",
        "nvtx,cuda",
        "-o",
        f"{jd}/nsys_profile/profile_%p",
        *NSYS_DEFAULTS,
        "python",
        *FDL_RUNNER,
        f"{jd}/configs/job_fn_or_script",
        "",
    ]
    assert packaged_profiling(job).profile_ranks == [0]


def test_local_partial_pytorch_leaves_command_alone_and_writes_config():
    plugin = PyTorchProfilerPlugin(
        profile_step_start=10,
        profile_step_end=15,
        profile_ranks=[0],
        record_memory_history=True,
        memory_snapshot_path="memory_snapshot.pickle",
        record_shapes=True,
    )
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"), [plugin])
    job = exp.jobs[0]
    jd = job.executor.job_dir
    assert local_argv(job)[0] == "torchrun" and "nsys" not in local_argv(job)
    assert packaged_profiling(job) == ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=10,
        profile_step_end=15,
        profile_ranks=[0],
        record_shapes=True,
        record_memory_history=True,
        memory_snapshot_path="memory_snapshot.pickle",
        output_dir=jd,
    )


def test_all_ranks_stays_empty_list():
    exp = dryrun(
        tiny_gpt_recipe(),
        run.LocalExecutor(),
        [PyTorchProfilerPlugin(profile_ranks=[], profile_step_start=3, profile_step_end=6)],
    )
    assert packaged_profiling(exp.jobs[0]).profile_ranks == []


def test_user_output_dir_wins():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(), [PyTorchProfilerPlugin(output_dir="/shared/prof")])
    assert packaged_profiling(exp.jobs[0]).output_dir == "/shared/prof"


def test_recipe_profiling_other_profiler_switched_off_and_unrelated_fields_survive():
    recipe = tiny_gpt_recipe(
        profiling=ProfilingConfig(
            use_pytorch_profiler=True,
            record_memory_history=True,
            memory_snapshot_path="mine.pickle",
            pytorch_profiler_with_stack=True,
            memory_history_max_entries=5000,
        )
    )
    with pytest.warns(ProfilingPluginWarning, match=r"had profiling.use_pytorch_profiler=True; switched off"):
        exp = dryrun(recipe, run.LocalExecutor(), [user_nsys_plugin()])
    got = packaged_profiling(exp.jobs[0])
    assert got == ProfilingConfig(
        use_nsys_profiler=True,
        use_pytorch_profiler=False,
        profile_step_start=10,
        profile_step_end=15,
        profile_ranks=[0, 1],
        record_memory_history=True,
        memory_snapshot_path="mine.pickle",
        pytorch_profiler_with_stack=True,
        memory_history_max_entries=5000,
        output_dir=exp.jobs[0].executor.job_dir,
    )


def test_recipe_output_dir_is_kept_over_job_dir_default():
    recipe = tiny_gpt_recipe(profiling=ProfilingConfig(output_dir="/lustre/profiles"))
    exp = dryrun(recipe, run.LocalExecutor(), [PyTorchProfilerPlugin()])
    assert packaged_profiling(exp.jobs[0]).output_dir == "/lustre/profiles"


def test_container_config_without_profiling_set():
    """run.Config(ConfigContainer) with no profiling argument: reading it would raise (default_factory)."""
    from recipes.train import pretrain

    task = run.Partial(pretrain, config=run.Config(ConfigContainer))
    exp = dryrun(task, run.LocalExecutor(), [PyTorchProfilerPlugin(profile_step_start=3, profile_step_end=6)])
    assert packaged_profiling(exp.jobs[0]) == ProfilingConfig(
        use_pytorch_profiler=True, profile_step_start=3, profile_step_end=6, output_dir=exp.jobs[0].executor.job_dir
    )


def test_megatron_bridge_shaped_container_found_by_field():
    task = run.Partial(foreign_pretrain, cfg=run.Config(ForeignContainer), steps=3)
    executor = assigned(run.LocalExecutor(), Path(get_nemorun_home()))
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        user_nsys_plugin().setup(task, executor)
    # nvtx_per_op at its default and the job-dir fallback are not worth a warning (no nsys here is)
    assert [str(w.message) for w in seen if "has no field" in str(w.message)] == []
    with pytest.warns(ProfilingPluginWarning, match=r"ForeignProfilingConfig has no field\(s\) \['nvtx_per_op'\]"):
        user_nsys_plugin(nvtx_per_op=True).setup(task, executor)
    FaultTolerancePlugin().setup(task, executor)
    assert fdl.build(task.cfg) == ForeignContainer(
        profiling=ForeignProfilingConfig(
            use_nsys_profiler=False, profile_step_start=10, profile_step_end=15, profile_ranks=[0, 1]
        ),
        ft=ForeignFT(enable_ft_package=True),
    )


def test_partial_without_container_is_rejected_without_changes():
    task = run.Partial(foreign_pretrain, cfg=None)
    executor = assigned(run.LocalExecutor(launcher="torchrun"), Path(get_nemorun_home()))
    before = executor.to_config()
    with pytest.raises(
        TypeError,
        match=r"NsysPlugin: run.Partial\(foreign_pretrain\) has no configured argument "
        r"with a 'profiling' field",
    ):
        user_nsys_plugin().setup(task, executor)
    assert executor.to_config() == before and executor.launcher == "torchrun"


def test_invalid_recipe_combination_fails_before_any_change():
    from recipes.train import pretrain

    task = run.Partial(
        pretrain, config=run.Config(ConfigContainer, profiling=run.Config(ProfilingConfig, memory_snapshot_path=""))
    )
    executor = assigned(run.LocalExecutor(), Path(get_nemorun_home()))
    with pytest.raises(
        ValueError,
        match=r"NsysPlugin: the recipe's profiling config combined with the plugin is "
        r"invalid: ProfilingConfig.memory_snapshot_path is empty",
    ):
        user_nsys_plugin().setup(task, executor)
    assert executor.launcher is None
    assert task.config.profiling.__arguments__ == {"memory_snapshot_path": ""}

"""Plugin contracts: bad values fail at construction, unsupported tasks fail without changes,
setup is idempotent (job groups), plugins survive Experiment.from_id, and the import boundaries hold."""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
import warnings
from pathlib import Path

import fiddle as fdl
import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, NsysPlugin, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from recipes.config import ConfigContainer
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import AWKWARD, assigned, awkward_plugin, dryrun, my_converter, slurm, user_nsys_plugin
from tests.support import ROOT

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def _partial_fn(values):  # a functools.partial target
    return []


@pytest.mark.parametrize(
    "cls,kwargs,exc,message",
    [
        (NsysPlugin, dict(profile_step_start=-1), ValueError, "NsysPlugin.profile_step_start=-1 is negative"),
        (
            NsysPlugin,
            dict(profile_step_start=10, profile_step_end=10),
            ValueError,
            "NsysPlugin.profile_step_end=10 must be greater than profile_step_start=10",
        ),
        (NsysPlugin, dict(profile_step_start="3"), TypeError, "NsysPlugin.profile_step_start must be an int, got '3'"),
        (NsysPlugin, dict(profile_ranks=[0, 0]), ValueError, "NsysPlugin.profile_ranks=[0, 0] repeats rank(s) [0]"),
        (NsysPlugin, dict(profile_ranks=[-1]), ValueError, "holds negative rank -1"),
        (
            NsysPlugin,
            dict(profile_ranks="0"),
            TypeError,
            "NsysPlugin.profile_ranks must be a list of global ranks, got '0'",
        ),
        (NsysPlugin, dict(profile_ranks=[0.5]), TypeError, "holds 0.5 (float)"),
        (NsysPlugin, dict(record_shapes="yes"), TypeError, "NsysPlugin.record_shapes must be a bool, got 'yes'"),
        (NsysPlugin, dict(output_dir=""), ValueError, "NsysPlugin.output_dir is empty"),
        (NsysPlugin, dict(output_dir=5), TypeError, "NsysPlugin.output_dir must be a str path or None, got 5"),
        (NsysPlugin, dict(nsys_trace=[]), ValueError, "NsysPlugin.nsys_trace=[] must be a non-empty list"),
        (NsysPlugin, dict(nsys_trace="cuda"), ValueError, "NsysPlugin.nsys_trace='cuda'"),
        (NsysPlugin, dict(nsys_trace=["cuda,nvtx"]), ValueError, "NsysPlugin.nsys_trace=['cuda,nvtx']"),
        (
            NsysPlugin,
            dict(nsys_extra_args="--stats=true"),
            TypeError,
            "NsysPlugin.nsys_extra_args must be a list of str",
        ),
        (NsysPlugin, dict(nsys_extra_args=["stats"]), ValueError, "'stats' is not an nsys option"),
        (NsysPlugin, dict(nsys_extra_args=["-o", "x"]), ValueError, "sets '-o': placement is set per executor"),
        (NsysPlugin, dict(nsys_extra_args=["--trace=cuda"]), ValueError, "sets '--trace': use nsys_trace"),
        (NsysPlugin, dict(nsys_gpu_metrics="yes"), TypeError, "NsysPlugin.nsys_gpu_metrics must be a bool, got 'yes'"),
        (NsysPlugin, dict(script_args_converter_fn=lambda v: []), TypeError, "define it with 'def' at module level"),
        (NsysPlugin, dict(script_args_converter_fn=functools.partial(_partial_fn)), TypeError, "at module level"),
        (NsysPlugin, dict(script_args_converter_fn=5), TypeError, "script_args_converter_fn must be a function, got 5"),
        (
            PyTorchProfilerPlugin,
            dict(memory_snapshot_path=""),
            ValueError,
            "PyTorchProfilerPlugin.memory_snapshot_path is empty",
        ),
        (PyTorchProfilerPlugin, dict(memory_snapshot_path="snaps/"), ValueError, "names a directory"),
        (
            PyTorchProfilerPlugin,
            dict(memory_history_max_entries=0),
            ValueError,
            "PyTorchProfilerPlugin.memory_history_max_entries=0 must be positive",
        ),
        (
            PyTorchProfilerPlugin,
            dict(with_stack=1),
            TypeError,
            "PyTorchProfilerPlugin.with_stack must be a bool, got 1",
        ),
        (
            PyTorchProfilerPlugin,
            dict(record_memory_history=None),
            TypeError,
            "PyTorchProfilerPlugin.record_memory_history must be a bool",
        ),
        (
            FaultTolerancePlugin,
            dict(num_in_job_restarts=-1),
            ValueError,
            "FaultTolerancePlugin.num_in_job_restarts=-1 is negative",
        ),
        (
            FaultTolerancePlugin,
            dict(num_job_retries_on_failure="2"),
            TypeError,
            "FaultTolerancePlugin.num_job_retries_on_failure must be an int, got '2'",
        ),
        (
            FaultTolerancePlugin,
            dict(rank_heartbeat_timeout=0),
            ValueError,
            "FaultTolerancePlugin.rank_heartbeat_timeout=0 must be positive",
        ),
        (
            FaultTolerancePlugin,
            dict(initial_rank_heartbeat_timeout=True),
            TypeError,
            "FaultTolerancePlugin.initial_rank_heartbeat_timeout must be seconds",
        ),
    ],
)
def test_validation_at_construction(cls, kwargs, exc, message):
    with pytest.raises(exc) as info:
        cls(**kwargs)
    assert message in str(info.value)
    assert type(info.value) is exc


@pytest.mark.parametrize(
    "kwargs,bad",
    [
        (dict(nsys_extra_args=["--env-var=A=1\nrm -rf /"]), "'--env-var=A=1\\nrm -rf /'"),
        (dict(nsys_extra_args=["--x=a\rb"]), "'--x=a\\rb'"),
        (dict(nsys_trace=["cuda`touch x`"]), "'cuda`touch x`'"),
        (dict(nsys_trace=["cuda$(id)"]), "'cuda$(id)'"),
        (dict(nsys_trace=["nvtx\ncuda"]), "'nvtx\\ncuda'"),
    ],
)
def test_nsys_values_that_cannot_be_carried_are_refused(kwargs, bad):
    with pytest.raises(ValueError) as info:
        NsysPlugin(**kwargs)
    assert bad in str(info.value) and str(info.value).startswith("NsysPlugin.nsys_")


def test_plugins_are_keyword_only():
    with pytest.raises(TypeError):
        NsysPlugin(10, 15)  # type: ignore[misc]


def plain_function(x=1):
    return x


@pytest.mark.parametrize("plugin", [user_nsys_plugin, PyTorchProfilerPlugin, FaultTolerancePlugin])
@pytest.mark.parametrize(
    "task,what",
    [
        (plain_function, "function"),
        (run.Config(ConfigContainer), "nemo_run.config.Config"),
        (run.Script(inline="echo hi"), "inline"),
    ],
)
def test_unsupported_task_types(plugin, task, what, tmp_path):
    p = plugin()
    executor = assigned(run.LocalExecutor(launcher="torchrun"), tmp_path)
    with pytest.raises(TypeError) as info:
        p.setup(task, executor)
    msg = str(info.value)
    assert msg.startswith(type(p).__name__)
    if what == "inline":
        assert "inline run.Script" in msg
    else:
        assert "supports run.Partial and run.Script tasks" in msg and what in msg
    assert executor.launcher == "torchrun"


@pytest.mark.parametrize(
    "make_executor",
    [
        lambda: run.LocalExecutor(ntasks_per_node=2, launcher="torchrun"),
        lambda: slurm(nodes=2, launcher="torchrun"),
        lambda: slurm(nodes=2),
        lambda: run.DockerExecutor(container_image="img"),
    ],
    ids=["local", "slurm-torchrun", "slurm", "docker"],
)
@pytest.mark.parametrize(
    "make_task", [tiny_gpt_recipe, lambda: tiny_gpt_script("train.train_iters=3")], ids=["partial", "script"]
)
@pytest.mark.parametrize(
    "plugins",
    [
        lambda: [
            user_nsys_plugin(
                nsys_gpu_metrics=True,
                nsys_extra_args=["--capture-range=nvtx", "--env-var=A=$(x) 'q'"],
                output_dir=AWKWARD,
            )
        ],
        lambda: [awkward_plugin()],
        lambda: [user_nsys_plugin(), FaultTolerancePlugin()],
    ],
    ids=["nsys", "pytorch", "nsys+ft"],
)
def test_setup_is_idempotent(make_executor, make_task, plugins, tmp_path):
    executor = assigned(make_executor(), tmp_path)
    task = make_task()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingPluginWarning)
        for p in plugins():
            p.setup(task, executor)
        once = (copy_cfg(task), executor.to_config())
        for p in plugins():
            p.setup(task, executor)
    assert (copy_cfg(task), executor.to_config()) == once


def copy_cfg(task):
    return task.args if isinstance(task, run.Script) else fdl.build(task.config)


def test_job_group_shares_executor_without_duplicates():
    """Job groups run setup once per task on the same executor."""
    with run.Experiment("plugtest", log_level="WARN") as exp:
        exp.add(
            [tiny_gpt_recipe(), tiny_gpt_script("train.train_iters=3")],
            executor=slurm(),
            plugins=[user_nsys_plugin(nsys_extra_args=["--capture-range=nvtx"])],
            name="grp",
        )
        exp.dryrun(log=False, delete_exp_dir=False)
    text = Path(exp.jobs[0].executors.experiment_dir, "grp_sbatch.sh").read_text()
    lines = [ln for ln in text.splitlines() if ln.startswith("srun --output")]
    assert len(lines) == 2
    for ln in lines:
        assert ln.count("nsys profile") == 1 and ln.count("--capture-range=") == 1
    assert lines[1].count("profiling.use_nsys_profiler=true") == 1


@pytest.mark.parametrize("make_task", [tiny_gpt_recipe, lambda: tiny_gpt_script("train.train_iters=3")])
def test_experiment_from_id_after_dryrun(make_task):
    plugins = [
        user_nsys_plugin(script_args_converter_fn=my_converter, nsys_extra_args=["--stats=true"]),
        FaultTolerancePlugin(num_in_job_restarts=5),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingPluginWarning)
        dryrun(make_task(), slurm(), plugins)
    back = run.Experiment.from_title("plugtest")
    (job,) = back.jobs
    assert [init_fields(p) for p in job.plugins] == [init_fields(p) for p in plugins]
    assert job.plugins[0].script_args_converter_fn is my_converter
    assert isinstance(job.executor.get_launcher(), run.FaultTolerance)


def init_fields(obj):
    return type(obj), {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj) if f.init}


@pytest.mark.slow
def test_job_side_never_imports_nemo_run_and_plugins_never_import_runtime():
    code = (
        "import sys; import bridge_plugins.runtime, recipes.train; "
        "assert 'nemo_run' not in sys.modules, 'runtime imported nemo_run'; "
        "import bridge_plugins.plugins as p; "
        "assert p.NsysPlugin and 'bridge_plugins.runtime' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)
    code = "import sys; import bridge_plugins.plugins; assert 'bridge_plugins.runtime' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=120)


def test_top_level_lazy_names():
    import bridge_plugins
    from bridge_plugins.plugins import fault_tolerance, nsys, pytorch

    assert bridge_plugins.NsysPlugin is nsys.NsysPlugin
    assert bridge_plugins.PyTorchProfilerPlugin is pytorch.PyTorchProfilerPlugin
    assert bridge_plugins.FaultTolerancePlugin is fault_tolerance.FaultTolerancePlugin
    assert issubclass(NsysPlugin, run.Plugin) and dataclasses.is_dataclass(NsysPlugin)

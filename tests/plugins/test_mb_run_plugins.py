"""Megatron Bridge's own plugin tests, ported (tests/unit_tests/recipes/test_run_plugins.py).

Names and assertions are Megatron Bridge's; imports are renamed. Two changes apply to every test,
each for the user's sake:
- Real NeMo Run objects instead of MagicMock: a ``run.Script``/``run.Partial`` and a
  ``run.LocalExecutor``/``run.SlurmExecutor`` (a mock accepts any attribute, so it cannot show that
  the executor really launches what the test asserts).
- Custom converters are module-level functions: NeMo Run stores a plugin in the experiment by
  import path, and a closure then fails when the experiment is packaged or reloaded; our plugins
  refuse it at construction, in the user's script.
Tests marked "Partial-era" come from the version of that file that tested run.Partial (Megatron
Bridge later dropped Partial support; we keep it). Where our behaviour differs on purpose, the
assertion is ours and a comment says why.
"""

from __future__ import annotations

import json

import nemo_run as run
import pytest

from bridge_plugins.plugins import FaultTolerancePlugin, NsysPlugin, ProfilingPluginWarning, PyTorchProfilerPlugin
from bridge_plugins.plugins.script_args import (
    FaultTolerancePluginScriptArgs,
    NsysPluginScriptArgs,
    PyTorchProfilerPluginScriptArgs,
)
from bridge_plugins.plugins.script_overrides import UNQUOTE_ARGV, split_route
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script


@pytest.fixture(autouse=True)
def _home(nemo_home):
    yield


@pytest.fixture
def executor(tmp_path):
    ex = run.LocalExecutor()
    ex.assign("mbtest_1", str(tmp_path / "exp"), task_id="job", task_dir="job")
    return ex


def script_task():
    return tiny_gpt_script()


def own_args(task):
    """The script's own args: on a LocalExecutor under ft_launcher or nsys, the plugin routes the job
    through unquote_argv.py (NeMo Run quotes every arg or appends one, and no shell undoes it)."""
    head, args = split_route(task)
    assert head is None or head[-2:] == ["-m", "recipes.train"]
    return args


# Module-level converters (Megatron Bridge defines these inside the tests).


def ft_custom_converter(args: FaultTolerancePluginScriptArgs):
    return [
        f"--ft-enabled={str(args.enable_ft_package).lower()}",
        f"--ft-calc-timeouts={str(args.calc_ft_timeouts).lower()}",
    ]


def nsys_custom_converter(args: NsysPluginScriptArgs):
    config = {
        "nsys_enabled": True,
        "start": args.profile_step_start,
        "end": args.profile_step_end,
        "ranks": args.profile_ranks,
        "shapes": args.record_shapes,
    }
    return ["--nsys-config", json.dumps(config)]


def pytorch_custom_converter(args: PyTorchProfilerPluginScriptArgs):
    return [
        "--pytorch-profiler",
        f"--profile-start={args.profile_step_start}",
        f"--profile-end={args.profile_step_end}",
        f"--profile-ranks={','.join(map(str, args.profile_ranks))}",
        f"--memory-history={'true' if args.record_memory_history else 'false'}",
    ]


class TestFaultTolerancePlugin:
    def test_default_initialization(self):
        plugin = FaultTolerancePlugin()
        assert plugin.enable_ft_package is True
        assert plugin.calc_ft_timeouts is True
        assert plugin.num_in_job_restarts == 3
        assert plugin.num_job_retries_on_failure == 2
        assert plugin.initial_rank_heartbeat_timeout == 1800
        assert plugin.rank_heartbeat_timeout == 300

    def test_setup_with_script_task(self, executor):
        plugin = FaultTolerancePlugin()
        task = script_task()
        plugin.setup(task, executor)
        assert "ft.enable_ft_package=true" in task.args
        assert "ft.calc_ft_timeouts=true" in task.args

    def test_custom_script_args_converter(self, executor):
        plugin = FaultTolerancePlugin(
            enable_ft_package=True, calc_ft_timeouts=False, script_args_converter_fn=ft_custom_converter
        )
        task = script_task()
        plugin.setup(task, executor)
        assert "--ft-enabled=true" in task.args
        assert "--ft-calc-timeouts=false" in task.args
        assert "ft.enable_ft_package=true" not in task.args

    def test_setup_with_partial_task(self, executor):  # Partial-era
        plugin = FaultTolerancePlugin(
            enable_ft_package=True, calc_ft_timeouts=False, num_in_job_restarts=5, num_job_retries_on_failure=3
        )
        task = tiny_gpt_recipe()
        plugin.setup(task, executor)
        # MB checks the FaultTolerance constructor's arguments on a patched class; we check the real launcher.
        launcher = executor.launcher
        assert isinstance(launcher, run.FaultTolerance)
        assert (launcher.max_restarts, launcher.initial_rank_heartbeat_timeout, launcher.rank_heartbeat_timeout) == (
            5,
            1800,
            300,
        )
        assert executor.retries == 3
        assert task.config.ft.enable_ft_package is True
        assert task.config.ft.calc_ft_timeouts is False

    def test_nsys_profiler_warning(self, executor):  # Partial-era
        plugin = FaultTolerancePlugin()
        task = tiny_gpt_recipe(profiling=dict(use_nsys_profiler=True))
        # Ours is a ProfilingPluginWarning (filterable, and it says why) instead of a logger.warning.
        with pytest.warns(
            ProfilingPluginWarning, match="nsys profiling is disabled because the job now runs under ft_launcher"
        ):
            plugin.setup(task, executor)
        assert task.config.profiling.use_nsys_profiler is False


class TestNsysPlugin:
    def test_initialization(self):
        plugin = NsysPlugin(
            profile_step_start=10,
            profile_step_end=20,
            profile_ranks=[0, 1],
            nsys_trace=["nvtx", "cuda", "cudnn"],
            record_shapes=True,
        )
        assert plugin.profile_step_start == 10
        assert plugin.profile_step_end == 20
        assert plugin.profile_ranks == [0, 1]
        assert plugin.nsys_trace == ["nvtx", "cuda", "cudnn"]
        assert plugin.record_shapes is True

    def test_setup_with_script_task(self, executor):
        plugin = NsysPlugin(profile_step_start=50, profile_step_end=100, profile_ranks=[0, 1, 2], record_shapes=True)
        task = script_task()
        plugin.setup(task, executor)
        expected_args = [
            "profiling.use_nsys_profiler=true",
            "profiling.profile_step_start=50",
            "profiling.profile_step_end=100",
            "profiling.profile_ranks=[0,1,2]",
            "profiling.record_shapes=true",
        ]
        for arg in expected_args:
            assert arg in task.args

    def test_custom_script_args_converter(self, executor):
        plugin = NsysPlugin(
            profile_step_start=10,
            profile_step_end=20,
            profile_ranks=[0, 1],
            record_shapes=True,
            script_args_converter_fn=nsys_custom_converter,
        )
        task = script_task()
        plugin.setup(task, executor)
        assert "--nsys-config" in task.args
        json_arg = None
        for i, arg in enumerate(task.args):
            if arg == "--nsys-config" and i + 1 < len(task.args):
                json_arg = task.args[i + 1]
                break
        assert json_arg is not None
        config = json.loads(json_arg)
        assert config["nsys_enabled"] is True
        assert config["start"] == 10
        assert config["end"] == 20
        assert "profiling.use_nsys_profiler=true" not in task.args

    def test_setup_with_partial_task(self, executor):  # Partial-era
        plugin = NsysPlugin(profile_step_start=100, profile_step_end=200)
        task = tiny_gpt_recipe()
        plugin.setup(task, executor)
        launcher = executor.get_launcher()
        assert launcher.nsys_profile is True
        assert launcher.nsys_trace == ["nvtx", "cuda"]
        assert task.config.profiling is not None
        assert task.config.profiling.use_nsys_profiler is True
        assert task.config.profiling.profile_step_start == 100
        assert task.config.profiling.profile_step_end == 200
        assert task.config.profiling.profile_ranks == [0]
        assert task.config.profiling.record_shapes is False

    def test_setup_with_slurm_executor(self, tmp_path):  # Partial-era
        plugin = NsysPlugin(profile_step_start=1, profile_step_end=10)
        task = tiny_gpt_recipe()
        executor = run.SlurmExecutor(account="acct", partition="part", nodes=1, ntasks_per_node=2)
        executor.assign("mbtest_1", str(tmp_path / "exp"), task_id="job", task_dir="job")
        plugin.setup(task, executor)
        assert executor.get_launcher().nsys_filename == (
            "profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}"
        )


class TestPyTorchProfilerPlugin:
    def test_initialization(self):
        plugin = PyTorchProfilerPlugin(
            profile_step_start=5,
            profile_step_end=15,
            profile_ranks=[0],
            record_memory_history=True,
            memory_snapshot_path="/tmp/memory.pickle",
            record_shapes=True,
        )
        assert plugin.profile_step_start == 5
        assert plugin.profile_step_end == 15
        assert plugin.profile_ranks == [0]
        assert plugin.record_memory_history is True
        assert plugin.memory_snapshot_path == "/tmp/memory.pickle"
        assert plugin.record_shapes is True

    def test_custom_script_args_converter(self, executor):
        plugin = PyTorchProfilerPlugin(
            profile_step_start=5,
            profile_step_end=15,
            profile_ranks=[0, 1],
            record_memory_history=True,
            script_args_converter_fn=pytorch_custom_converter,
        )
        task = script_task()
        plugin.setup(task, executor)
        assert "--pytorch-profiler" in task.args
        assert "--profile-start=5" in task.args
        assert "--profile-end=15" in task.args
        assert "--profile-ranks=0,1" in task.args
        assert "--memory-history=true" in task.args
        assert "profiling.use_pytorch_profiler=true" not in task.args

    def test_setup_with_partial_task(self, executor):  # Partial-era
        plugin = PyTorchProfilerPlugin(profile_step_start=10, profile_step_end=20, record_memory_history=True)
        task = tiny_gpt_recipe()
        plugin.setup(task, executor)
        assert task.config.profiling is not None
        assert task.config.profiling.use_pytorch_profiler is True
        assert task.config.profiling.profile_step_start == 10
        assert task.config.profiling.profile_step_end == 20
        assert task.config.profiling.profile_ranks == [0]
        assert task.config.profiling.record_memory_history is True
        # Ours: 'memory_snapshot.pickle', resolved under output_dir (the job directory), so snapshots
        # land beside the traces; MB's 'snapshot.pickle' lands in whatever the working directory is.
        assert task.config.profiling.memory_snapshot_path == "memory_snapshot.pickle"
        assert task.config.profiling.record_shapes is False


class TestPluginIntegration:
    def test_script_task_with_multiple_plugins(self, executor):
        # MB pairs NsysPlugin with its WandbPlugin; we have no WandbPlugin, so only the nsys half
        # (and its assertions) applies.
        nsys_plugin = NsysPlugin(profile_step_start=100, profile_step_end=200, profile_ranks=[0, 1])
        task = script_task()
        nsys_plugin.setup(task, executor)
        assert "profiling.use_nsys_profiler=true" in task.args
        assert "profiling.profile_step_start=100" in task.args


# Ours, beyond the port: the typed arguments keep our mapping-style converters working.


def mapping_converter(values):
    return [f"--{k}={v}" for k, v in values.items() if k in ("output_dir", "nvtx_per_op")] + [
        f"--start={values['profile_step_start']}"
    ]


def test_mapping_style_converter_still_sees_every_value(executor):
    task = script_task()
    plugin = NsysPlugin(profile_step_start=3, profile_step_end=5, script_args_converter_fn=mapping_converter)
    plugin.setup(task, executor)
    assert own_args(task) == ["--nvtx_per_op=False", f"--output_dir={executor.job_dir}", "--start=3"]


def test_typed_args_have_exactly_megatron_bridges_fields():
    import dataclasses

    assert [f.name for f in dataclasses.fields(NsysPluginScriptArgs)] == [
        "profile_step_start",
        "profile_step_end",
        "profile_ranks",
        "record_shapes",
    ]
    assert [f.name for f in dataclasses.fields(PyTorchProfilerPluginScriptArgs)] == [
        "profile_step_start",
        "profile_step_end",
        "profile_ranks",
        "record_memory_history",
        "memory_snapshot_path",
        "record_shapes",
    ]
    assert [f.name for f in dataclasses.fields(FaultTolerancePluginScriptArgs)] == [
        "enable_ft_package",
        "calc_ft_timeouts",
    ]
    direct = FaultTolerancePluginScriptArgs(enable_ft_package=True, calc_ft_timeouts=False)  # built as MB's code does
    assert dict(direct) == {"enable_ft_package": True, "calc_ft_timeouts": False}
    assert dataclasses.asdict(direct) == dict(direct)


def test_ft_script_args_reach_the_job_and_parse(executor):
    from recipes.overrides import parse_overrides

    task = script_task()
    FaultTolerancePlugin(calc_ft_timeouts=False).setup(task, executor)
    assert task.path == UNQUOTE_ARGV
    cfg = parse_overrides(own_args(task))
    assert (cfg.ft.enable_ft_package, cfg.ft.calc_ft_timeouts) == (True, False)


def bad_ft_converter(args):
    return "ft.enable_ft_package=true"  # a str, not a list


def test_ft_bad_converter_or_flag_changes_nothing(executor):
    task = script_task()
    before = (list(task.args), executor.launcher, executor.retries)
    with pytest.raises(TypeError, match="FaultTolerancePlugin.script_args_converter_fn must return a list of str"):
        FaultTolerancePlugin(script_args_converter_fn=bad_ft_converter).setup(task, executor)
    assert (list(task.args), executor.launcher, executor.retries) == before
    with pytest.raises(TypeError, match="FaultTolerancePlugin.calc_ft_timeouts must be a bool, got 'no'"):
        FaultTolerancePlugin(calc_ft_timeouts="no")


def no_ft_args(args):
    return []  # the job reads FT from elsewhere (its own config file)


def test_ft_converter_returning_no_args_adds_none(executor):
    task = script_task()
    before = list(task.args)
    FaultTolerancePlugin(script_args_converter_fn=no_ft_args).setup(task, executor)
    assert own_args(task) == before


def test_ft_false_values_are_written_and_setup_twice_adds_nothing(executor):
    task = script_task()
    plugin = FaultTolerancePlugin(enable_ft_package=False, calc_ft_timeouts=False)
    plugin.setup(task, executor)
    plugin.setup(task, executor)
    assert own_args(task) == ["ft.enable_ft_package=false", "ft.calc_ft_timeouts=false"]

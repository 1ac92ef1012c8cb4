"""FaultTolerancePlugin's rules one by one (nothing is launched): each refusal's whole line, the
boundary values it accepts, which plugin a warning or refusal names, when the task had nsys on,
and that the Script converter is left alone for a run.Partial."""

from __future__ import annotations

import re
from dataclasses import dataclass

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, ProfilingConfig, PyTorchProfilerPlugin
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import ForeignContainer, ForeignFT, assigned, foreign_pretrain, slurm
from tests.plugins.executor_doubles import UnlistedExecutor
from tests.plugins.plugin_warnings import plugin_warnings

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)

FT = "FaultTolerancePlugin"
NSYS_OFF = "FaultTolerancePlugin: nsys profiling is disabled because the job now runs under ft_launcher: "


@pytest.mark.parametrize(
    ("kwargs", "exc", "line"),
    [
        ({"num_in_job_restarts": True}, TypeError, f"{FT}.num_in_job_restarts must be an int, got True (bool)"),
        (
            {"enable_ft_package": "yes"},
            TypeError,
            f"{FT}.enable_ft_package must be a bool, got 'yes' (str); pass True or False",
        ),
        ({"calc_ft_timeouts": 1}, TypeError, f"{FT}.calc_ft_timeouts must be a bool, got 1 (int); pass True or False"),
        (
            {"rank_heartbeat_timeout": "30"},
            TypeError,
            f"{FT}.rank_heartbeat_timeout must be seconds (int or float) or None, got '30' (str)",
        ),
        (
            {"initial_rank_heartbeat_timeout": 2**63},
            ValueError,
            f"{FT}.initial_rank_heartbeat_timeout=9223372036854775808 does not fit in a signed 64-bit integer "
            "(int64); use at most 9223372036854775807",
        ),
        (
            {"script_args_converter_fn": lambda a: []},
            TypeError,
            None,  # the lambda's repr holds an address: checked by its start and end
        ),
    ],
)
def test_each_refusal_is_its_whole_line(kwargs, exc, line):
    with pytest.raises(exc) as raised:
        FaultTolerancePlugin(**kwargs)
    if line is not None:
        assert str(raised.value) == line
    else:
        text = str(raised.value)
        assert text.startswith(f"{FT}.script_args_converter_fn=<function ") and text.endswith(
            "cannot be saved with the experiment (NeMo Run stores functions by import path); define it with "
            "'def' at module level (no lambda, closure or functools.partial)"
        ), text


def test_the_smallest_counts_and_timeouts_are_accepted(tmp_path):
    """0 restarts and 0 retries switch them off; any positive number of seconds is a timeout."""
    plugin = FaultTolerancePlugin(
        num_in_job_restarts=0,
        num_job_retries_on_failure=0,
        initial_rank_heartbeat_timeout=1,
        rank_heartbeat_timeout=0.5,
    )
    executor = assigned(run.LocalExecutor(), tmp_path)
    plugin.setup(tiny_gpt_recipe(), executor)
    launcher = executor.get_launcher()
    assert (launcher.max_restarts, executor.retries) == (0, 0)
    assert (launcher.initial_rank_heartbeat_timeout, launcher.rank_heartbeat_timeout) == (1, 0.5)


def test_an_unlisted_executor_is_refused_naming_the_plugin_and_left_unchanged(tmp_path):
    executor = assigned(UnlistedExecutor(), tmp_path)
    with pytest.raises(TypeError, match=r"^FaultTolerancePlugin: UnlistedExecutor is not supported \(supported: "):
        FaultTolerancePlugin().setup(tiny_gpt_script(), executor)
    assert executor.launcher is None and executor.retries == 0


def test_a_partial_without_a_config_container_is_refused_naming_the_plugin(tmp_path):
    task = run.Partial(foreign_pretrain, steps=3)
    with pytest.raises(TypeError) as raised:
        FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path))
    assert str(raised.value) == (
        "FaultTolerancePlugin: run.Partial(foreign_pretrain) has no configured argument with a 'profiling' "
        "field (arguments: ['steps']); pass the ConfigContainer as run.Partial(foreign_pretrain, config=...)"
    )


def test_a_foreign_ft_section_without_calc_ft_timeouts_is_named_in_the_warning(tmp_path):
    task = run.Partial(foreign_pretrain, cfg=run.Config(ForeignContainer, ft=run.Config(ForeignFT)))
    messages = plugin_warnings(lambda: FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path)))
    assert messages == [f"{FT}: tests.launch_support.ForeignFT has no field(s) ['calc_ft_timeouts']; not set"]
    assert task.cfg.ft.enable_ft_package is True


@dataclass
class NoFT:
    profiling: ProfilingConfig | None = None


def test_a_container_without_ft_section_warns_the_whole_line(tmp_path):
    task = run.Partial(foreign_pretrain, cfg=run.Config(NoFT))
    messages = plugin_warnings(lambda: FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path)))
    assert messages == [f"{FT}: NoFT has no 'ft' section; the job is not told that it runs under ft_launcher"]


@pytest.mark.parametrize(
    ("arg", "warned"),
    [("profiling.use_nsys_profiler=true", True), ("profiling.use_nsys_profiler=false", False), (None, False)],
)
def test_a_script_that_turned_nsys_on_is_told_it_is_off(arg, warned, tmp_path):
    """The task's own ``profiling.use_nsys_profiler=true`` (no nsys launcher) is enough to warn."""
    task = tiny_gpt_script(*([arg] if arg else []))
    messages = plugin_warnings(lambda: FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path)))
    assert [m.startswith(NSYS_OFF) for m in messages] == ([True] if warned else [])
    if arg:
        assert "profiling.use_nsys_profiler=false" in task.args
    assert task.args[-2:] == ["ft.enable_ft_package=true", "ft.calc_ft_timeouts=true"]


def test_a_torchrun_quoted_script_arg_stays_as_the_user_wrote_it(tmp_path):
    """torchrun and ft_launcher both shell-quote Script args on Slurm, so an arg the user wrote for
    torchrun is already right for ft_launcher: kept byte for byte, not decoded as shell text."""
    task = tiny_gpt_script("model.name='ab'", "train.train_iters=8")
    FaultTolerancePlugin().setup(task, assigned(slurm(launcher="torchrun"), tmp_path))
    assert task.args == [
        "model.name='ab'",
        "train.train_iters=8",
        "ft.enable_ft_package=true",
        "ft.calc_ft_timeouts=true",
    ]


CALLS: list[object] = []


def recording_converter(args) -> list[str]:
    """A module-level converter that records its calls and returns what no Script could take."""
    CALLS.append(args)
    return "not a list"  # type: ignore[return-value]


def test_the_script_converter_is_not_called_for_a_partial(tmp_path):
    CALLS.clear()
    task = tiny_gpt_recipe()
    FaultTolerancePlugin(script_args_converter_fn=recording_converter).setup(
        task, assigned(run.LocalExecutor(), tmp_path)
    )
    assert CALLS == [] and task.config.ft.enable_ft_package is True
    with pytest.raises(
        TypeError, match=re.escape(f"{FT}.script_args_converter_fn must return a list of str, got 'not a list'")
    ):
        FaultTolerancePlugin(script_args_converter_fn=recording_converter).setup(
            tiny_gpt_script(), assigned(run.LocalExecutor(), tmp_path / "s")
        )
    assert len(CALLS) == 1


def test_pytorch_plugin_warns_the_whole_line_when_the_launcher_keeps_nsys(tmp_path):
    executor = assigned(run.LocalExecutor(launcher=run.Torchrun(nsys_profile=True)), tmp_path)
    messages = plugin_warnings(lambda: PyTorchProfilerPlugin().setup(tiny_gpt_recipe(), executor))
    assert messages == [
        "PyTorchProfilerPlugin: the launcher still wraps the job in nsys, which records nothing now that "
        "the job runs the PyTorch profiler instead"
    ]


def test_a_script_arg_that_cannot_be_requoted_for_ft_launcher_is_refused_naming_the_plugin(tmp_path):
    """On Slurm without a launcher the arg is one bash word; ft_launcher quotes it itself, so FT
    decodes it first: an unbalanced quote is no bash word and is refused, the task unchanged."""
    task = tiny_gpt_script("model.name=it's")
    with pytest.raises(ValueError) as raised:
        FaultTolerancePlugin().setup(task, assigned(slurm(), tmp_path))
    assert str(raised.value) == (
        "FaultTolerancePlugin: the task's arg \"model.name=it's\" cannot be re-quoted for the new launcher (it is "
        "not what NeMo Run's quoting on this executor produces); remove or simplify it"
    )
    assert task.args == ["model.name=it's"]


def single_quote_converter(args) -> list[str]:
    """A module-level converter whose arg NeMo Run's quoting breaks on Docker with ft_launcher."""
    return [f"ft.enable_ft_package={str(args.enable_ft_package).lower()}", "ft.note=it's"]


def test_a_converter_arg_docker_cannot_carry_is_refused_naming_the_plugin(tmp_path):
    task = tiny_gpt_script()
    with pytest.raises(ValueError) as raised:
        FaultTolerancePlugin(script_args_converter_fn=single_quote_converter).setup(
            task, assigned(run.DockerExecutor(container_image="img"), tmp_path)
        )
    assert str(raised.value) == (
        "FaultTolerancePlugin: script arg \"ft.note=it's\" contains a single quote; NeMo Run's launcher quoting "
        "breaks it on this executor (Docker, or Slurm with nsys GPU metrics, with torchrun)"
    )
    assert task.args == []

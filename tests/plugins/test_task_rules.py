"""What the profiler plugins say about the task, by whole lines (nothing is launched): the task
types they refuse, the other profiler they switch off, and a recipe whose profiling section is
invalid once the plugin's values are merged in (the error keeps its type)."""

from __future__ import annotations

from pathlib import PurePosixPath

import nemo_run as run
import pytest

from bridge_plugins import NsysPlugin, ProfilingConfig, PyTorchProfilerPlugin
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import ForeignContainer, assigned, foreign_pretrain, slurm
from tests.plugins.plugin_warnings import plugin_warnings

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)

PT = "PyTorchProfilerPlugin"


def test_a_task_of_another_type_is_refused_with_its_repr_cut_at_80_characters(tmp_path):
    task = PurePosixPath("/" + "x" * 100)  # a type from a module of its own: pathlib
    with pytest.raises(TypeError) as raised:
        PyTorchProfilerPlugin().setup(task, assigned(run.LocalExecutor(), tmp_path))
    assert str(raised.value) == (
        f"{PT} supports run.Partial and run.Script tasks, got pathlib.PurePosixPath (PurePosixPath('/{'x' * 64}); "
        "wrap a function as run.Partial(fn, config=...)"
    )


def test_an_inline_script_is_refused_by_the_whole_line(tmp_path):
    with pytest.raises(TypeError) as raised:
        PyTorchProfilerPlugin().setup(run.Script(inline="echo hi"), assigned(run.LocalExecutor(), tmp_path))
    assert str(raised.value) == (
        f"{PT} cannot pass settings to an inline run.Script (NeMo Run ignores args for inline scripts); "
        "use run.Script(path=..., args=[...])"
    )


@pytest.mark.parametrize("kind", ["partial", "script"])
def test_the_other_profiler_is_switched_off_with_the_whole_line(kind, tmp_path):
    if kind == "partial":
        task = tiny_gpt_recipe()
        task.config.profiling = run.Config(ProfilingConfig, use_nsys_profiler=True)
    else:
        task = tiny_gpt_script("profiling.use_nsys_profiler=true")
    messages = plugin_warnings(lambda: PyTorchProfilerPlugin().setup(task, assigned(run.LocalExecutor(), tmp_path)))
    assert messages == [
        f"{PT}: the task had profiling.use_nsys_profiler=True; switched off (the two profilers are mutually exclusive)"
    ]


@pytest.mark.parametrize(
    ("recipe", "exc", "error"),
    [
        (
            {"memory_history_max_entries": 0},
            ValueError,
            "ProfilingConfig.memory_history_max_entries=0 must be positive (default 100000)",
        ),
        (
            {"record_memory_history": "yes"},
            TypeError,
            "ProfilingConfig.record_memory_history must be a bool, got 'yes' (str); pass True or False",
        ),
    ],
)
def test_an_invalid_recipe_section_is_refused_naming_the_plugin_and_keeping_the_error_type(
    recipe, exc, error, tmp_path
):
    task = tiny_gpt_recipe()
    task.config.profiling = run.Config(ProfilingConfig, **recipe)
    with pytest.raises(exc) as raised:
        NsysPlugin().setup(task, assigned(run.SlurmExecutor(account="a"), tmp_path))
    assert type(raised.value) is exc
    assert (
        str(raised.value) == f"NsysPlugin: the recipe's profiling config combined with the plugin is invalid: {error}"
    )


def test_a_value_holding_an_equals_sign_is_sent_once(tmp_path):
    """Megatron Bridge's keys are told apart from ours by the name before the first '='."""
    task = tiny_gpt_script()
    PyTorchProfilerPlugin(memory_snapshot_path="snap=1.pickle").setup(task, assigned(run.LocalExecutor(), tmp_path))
    sent = [a for a in task.args if a.startswith("profiling.memory_snapshot_path=")]
    assert sent == ['profiling.memory_snapshot_path="snap=1.pickle"']


def test_an_output_dir_asked_for_is_reported_when_the_section_cannot_hold_it(tmp_path):
    """Unasked, the job dir default is dropped silently; asked for, its loss is said."""
    task = run.Partial(foreign_pretrain, cfg=run.Config(ForeignContainer), steps=3)
    messages = plugin_warnings(lambda: NsysPlugin(output_dir="/out").setup(task, assigned(slurm(), tmp_path)))
    assert messages == [
        "NsysPlugin: tests.launch_support.ForeignProfilingConfig has no field(s) ['output_dir']; not set"
    ]
    unasked = run.Partial(foreign_pretrain, cfg=run.Config(ForeignContainer), steps=3)
    assert plugin_warnings(lambda: NsysPlugin().setup(unasked, assigned(slurm(), tmp_path / "b"))) == []

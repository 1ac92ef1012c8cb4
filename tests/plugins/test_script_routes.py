"""run.Script args and routes, exactly (nothing is launched): an arg the task already has for a key
the plugin writes is replaced, not repeated; a task routed through unquote_argv.py by path (not
``-m``) is re-routed, or un-routed, back to that path."""

from __future__ import annotations

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, PyTorchProfilerPlugin
from bridge_plugins.plugins.quoting import QuotingChain
from bridge_plugins.plugins.script_overrides import UNQUOTE_ARGV, plan_script_args, split_route
from recipes.tiny_gpt import tiny_gpt_script
from tests.launch_support import assigned, slurm

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_an_arg_for_a_key_the_plugin_writes_is_replaced_by_the_plugins_value(tmp_path):
    task = tiny_gpt_script(
        "profiling.profile_step_start=3",
        "train.train_iters=8",
        "profiling.profile_ranks=[5]",
        "profiling.memory_snapshot_path=a=b.pickle",  # the key is the name before the first '='
    )
    PyTorchProfilerPlugin(profile_step_start=5, profile_step_end=6).setup(task, assigned(run.LocalExecutor(), tmp_path))
    assert task.args == [
        "train.train_iters=8",
        "profiling.use_pytorch_profiler=true",
        "profiling.profile_step_start=5",
        "profiling.profile_step_end=6",
        "profiling.profile_ranks=[0]",
        "profiling.record_memory_history=false",
        "profiling.memory_snapshot_path=memory_snapshot.pickle",
        "profiling.record_shapes=false",
    ]


def _routed(*args: str) -> run.Script:
    return run.Script(path=UNQUOTE_ARGV, args=["--quoted", "/jobs/train.py", *args], entrypoint="python")


@pytest.mark.parametrize(
    ("route", "path", "args"),
    [
        ((), "/jobs/train.py", ["a=2"]),  # no fix left: the script runs by its own path again
        (("--quoted", "--nsys-postfix"), UNQUOTE_ARGV, ["--quoted", "--nsys-postfix", "/jobs/train.py", "a=2"]),
    ],
)
def test_a_task_routed_by_path_is_rerouted_to_the_same_path(route, path, args):
    task = _routed("a=1")
    plan_script_args(task, ["a=2"], route)()
    assert (task.path, task.m, task.args) == (path, False, args)


def test_an_arg_the_executors_quoting_cannot_read_is_kept_as_written(tmp_path):
    """On Slurm each arg is one bash word; an unbalanced quote is not one, so no key is read from
    it and it stays, before the plugin's own args."""
    task = tiny_gpt_script("note=it's")
    PyTorchProfilerPlugin().setup(task, assigned(slurm(), tmp_path))
    assert task.args[:2] == ["note=it's", "profiling.use_pytorch_profiler=true"]


def test_a_users_arg_the_new_launcher_cannot_carry_is_refused_naming_the_plugin(tmp_path):
    """Docker: the user's arg, quoted for docker's ``bash -c`` without a launcher, holds a single
    quote, which ft_launcher's own quoting would break there."""
    arg = QuotingChain(("shell", "double_quoted")).encode("model.name=it's")
    task = tiny_gpt_script(arg)
    with pytest.raises(ValueError) as raised:
        FaultTolerancePlugin().setup(task, assigned(run.DockerExecutor(container_image="img"), tmp_path))
    assert str(raised.value) == (
        "FaultTolerancePlugin: script arg \"model.name=it's\" contains a single quote; NeMo Run's launcher "
        "quoting breaks it on this executor (Docker, or Slurm with nsys GPU metrics, with torchrun)"
    )
    assert task.args == [arg]


@pytest.mark.parametrize(
    ("args", "head", "own"),
    [
        (
            ["--quoted", "--nsys-postfix", "-m", "recipes.train", "a=1"],
            ["--quoted", "--nsys-postfix", "-m", "recipes.train"],
            ["a=1"],
        ),
        (["--quoted", "/jobs/train.py", "a=1"], ["--quoted", "/jobs/train.py"], ["a=1"]),  # by path: one word
        (["/jobs/train.py", "a=1"], ["/jobs/train.py"], ["a=1"]),  # no option left: the script is the head
        (["--quoted"], ["--quoted"], []),  # options only: nothing is read past the end
    ],
)
def test_a_route_head_is_its_options_then_the_script(args, head, own):
    assert split_route(run.Script(path=UNQUOTE_ARGV, args=args, entrypoint="python")) == (head, own)

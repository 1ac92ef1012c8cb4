"""What the profiler plugins share (plugins/base.py), where test_validation.py matches only a prefix:
the whole refusal line for a value of the wrong type; a setup before the job directory is known."""

from __future__ import annotations

from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins import NsysPlugin, PyTorchProfilerPlugin
from recipes.tiny_gpt import tiny_gpt_script

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


def test_a_non_bool_is_refused_naming_its_type():
    with pytest.raises(TypeError) as e:
        NsysPlugin(nsys_gpu_metrics="yes")
    assert str(e.value) == "NsysPlugin.nsys_gpu_metrics must be a bool, got 'yes' (str); pass True or False"


def test_a_non_function_converter_is_refused_naming_its_type():
    with pytest.raises(TypeError) as e:
        NsysPlugin(script_args_converter_fn=5)
    assert str(e.value) == "NsysPlugin.script_args_converter_fn must be a function, got 5 (int)"


def test_before_the_job_directory_is_known_no_output_directory_is_set():
    """setup on a Slurm executor NeMo Run has not assigned yet: the job writes under its default,
    and nothing is exported for a directory nobody knows."""
    executor, task = run.SlurmExecutor(account="a"), tiny_gpt_script()
    PyTorchProfilerPlugin().setup(task, executor)
    assert executor.env_vars == {}
    assert not any(a.startswith("profiling.output_dir") for a in task.args)
    assert "profiling.use_pytorch_profiler=true" in task.args


class Converters:
    """A converter may live in a module-level class: it is saved as ``module.Converters.none``."""

    @staticmethod
    def none(values: dict) -> list[str]:
        return []


class WithoutModule:
    """A callable that names no module (a crafted one: every function and class instance has one)."""

    @property
    def __module__(self):  # type: ignore[override]
        raise AttributeError("__module__")

    def __call__(self, values: dict) -> list[str]:
        return []


def test_a_converter_is_found_by_its_dotted_name_or_refused():
    assert NsysPlugin(script_args_converter_fn=Converters.none).script_args_converter_fn is Converters.none
    with pytest.raises(TypeError, match="cannot be saved with the experiment"):
        NsysPlugin(script_args_converter_fn=WithoutModule())


def test_ranks_given_as_a_tuple_and_paths_as_path_objects_are_stored_as_plain_data():
    """NeMo Run serializes the plugin with fiddle, which takes lists and strings, not a tuple or a Path."""
    plugin = PyTorchProfilerPlugin(profile_ranks=(0, 1), output_dir=Path("/results/run1"))
    assert (plugin.profile_ranks, plugin.output_dir) == ([0, 1], "/results/run1")

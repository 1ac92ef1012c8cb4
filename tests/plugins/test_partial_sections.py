"""partial_config on containers shaped every way a recipe may declare a section: which class the
new section is built from (the annotation, Optional either side, the default factory, the plugin's
fallback), a section held as a dataclass instance, and the refusals' whole lines."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, ProfilingConfig, PyTorchProfilerPlugin
from bridge_plugins.plugins import ProfilingPluginWarning
from bridge_plugins.plugins.partial_config import PROFILING, find_config_container, plan_section, read_section
from recipes.config import ConfigContainer
from tests.launch_support import assigned, foreign_pretrain

pytestmark = pytest.mark.usefixtures("nemo_home")  # an isolated NeMo Run home per test (tests/conftest.py)


@dataclass
class OwnProfiling:
    """A recipe's own profiling section class (not bridge_plugins' ProfilingConfig)."""

    use_nsys_profiler: bool = False
    profile_step_start: int = 0


@dataclass
class Other:
    """Another section, declared before ``profiling`` with a default factory of its own."""

    size: int = 1


@dataclass
class Annotated:
    profiling: OwnProfiling = None  # type: ignore[assignment]  # declared, no default factory


@dataclass
class NoneFirst:
    profiling: None | OwnProfiling = None


@dataclass
class UnionWithInt:
    profiling: int | OwnProfiling = 0


@dataclass
class FactoryOnly:
    other: Other = field(default_factory=Other)
    profiling: Any = field(default_factory=OwnProfiling)


@dataclass
class NoClass:
    other: Other = field(default_factory=Other)
    profiling: Any = field(default_factory=dict)


@dataclass
class Unresolvable:
    other: Other = field(default_factory=Other)
    profiling: NotDefinedAnywhere = field(default_factory=OwnProfiling)  # type: ignore[name-defined]  # noqa: F821


def _written(container_cls: type, fallback: type | None = ProfilingConfig) -> run.Config:
    container = run.Config(container_cls)
    edit, merged = plan_section("P", container, PROFILING, {"use_nsys_profiler": True}, fallback=fallback)
    assert merged == {"use_nsys_profiler": True}
    edit()
    return container.profiling


@pytest.mark.parametrize(
    ("container_cls", "section_cls"),
    [
        (Annotated, OwnProfiling),  # a plain annotation, not Optional
        (NoneFirst, OwnProfiling),  # NoneType first among the union's members
        (UnionWithInt, OwnProfiling),  # a class that is not a dataclass first
        (FactoryOnly, OwnProfiling),  # no dataclass annotation: the field's default factory
        (Unresolvable, OwnProfiling),  # an annotation that does not resolve: the default factory
        (NoClass, ProfilingConfig),  # neither: the plugin's fallback
    ],
)
def test_the_section_class_comes_from_the_annotation_then_the_factory_then_the_fallback(container_cls, section_cls):
    section = _written(container_cls)
    assert section.__fn_or_cls__ is section_cls and section.use_nsys_profiler is True


def test_no_class_and_no_fallback_is_refused_by_its_whole_line():
    with pytest.raises(TypeError) as raised:
        _written(NoClass, fallback=None)
    assert str(raised.value) == "P: cannot tell the class of NoClass.profiling"


def test_a_section_held_as_an_instance_is_read_field_by_field():
    container = run.Config(Annotated)
    container.profiling = OwnProfiling(use_nsys_profiler=True)  # run.Config(...) itself would convert it
    assert read_section(container, PROFILING) == {"use_nsys_profiler": True, "profile_step_start": 0}
    edit, merged = plan_section("P", container, PROFILING, {"profile_step_start": 7})
    edit()
    assert merged == {"use_nsys_profiler": True, "profile_step_start": 7}  # every field of the instance
    assert isinstance(container.profiling, run.Config) and container.profiling.__arguments__ == merged


@pytest.mark.parametrize("value", [5, OwnProfiling])
def test_a_section_that_is_neither_config_nor_instance_is_refused_by_its_whole_line(value):
    container = run.Config(Annotated)
    container.profiling = value
    with pytest.raises(TypeError) as raised:
        read_section(container, PROFILING)
    assert str(raised.value) == f"cannot read section {value!r}: expected a run.Config or a dataclass"


@dataclass
class AnyProfiling:
    profiling: Any = None


def test_ft_switches_nsys_off_in_a_section_whose_class_only_the_fallback_tells(tmp_path):
    """``profiling: Any`` (no class, no factory): the section is rebuilt as bridge_plugins'
    ProfilingConfig, the class the plugins write."""
    task = run.Partial(
        foreign_pretrain, cfg=run.Config(AnyProfiling, profiling=run.Config(ProfilingConfig, use_nsys_profiler=True))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path))
    messages = [str(w.message) for w in caught if issubclass(w.category, ProfilingPluginWarning)]
    assert (
        messages[0]
        == "FaultTolerancePlugin: AnyProfiling has no 'ft' section; the job is not told that it runs under ft_launcher"
    )
    assert messages[1].startswith("FaultTolerancePlugin: nsys profiling is disabled")
    assert task.cfg.profiling.__fn_or_cls__ is ProfilingConfig
    assert task.cfg.profiling.__arguments__ == {"use_nsys_profiler": False}


def _pretrain_many(config: Any = None, other: Any = None, more: Any = None) -> None:
    """A training function with several arguments that may hold a profiling section."""


def test_the_argument_named_config_wins_over_another_with_a_profiling_field():
    task = run.Partial(_pretrain_many, config=run.Config(ConfigContainer), other=run.Config(ConfigContainer))
    assert find_config_container("P", task) is task.config


def test_two_profiling_arguments_none_named_config_are_refused_by_the_whole_line():
    task = run.Partial(_pretrain_many, config=3, other=run.Config(ConfigContainer), more=run.Config(ConfigContainer))
    with pytest.raises(TypeError) as raised:
        find_config_container("P", task)
    assert str(raised.value) == (
        "P: run.Partial(_pretrain_many) has several arguments with a 'profiling' field (['more', 'other']); "
        "name the one to profile 'config'"
    )


class TrainCallable:
    """A callable object as the Partial's function: it has no ``__qualname__`` of its own."""

    def __call__(self, steps: int = 1) -> None:
        """Train."""

    def __repr__(self) -> str:
        return "<TrainCallable>"


def test_a_partial_of_a_callable_object_is_named_by_its_repr():
    task = run.Partial(TrainCallable(), steps=2)
    with pytest.raises(TypeError) as raised:
        find_config_container("P", task)
    assert str(raised.value) == (
        "P: run.Partial(<TrainCallable>) has no configured argument with a 'profiling' field (arguments: "
        "['steps']); pass the ConfigContainer as run.Partial(<TrainCallable>, config=...)"
    )


def test_tuples_are_written_as_lists():
    """fiddle keeps a tuple as a tuple; the job's section takes lists (``profile_ranks``)."""
    container = run.Config(ConfigContainer)
    container.profiling = run.Config(ProfilingConfig, profile_ranks=(2, 3))
    edit, merged = plan_section("P", container, PROFILING, {"profile_step_start": 1}, fallback=ProfilingConfig)
    edit()
    assert merged == {"profile_ranks": [2, 3], "profile_step_start": 1}
    assert type(container.profiling.profile_ranks) is list


@dataclass
class NoNsysProfiling:
    """A declared profiling class without ``use_nsys_profiler``."""

    profile_step_start: int = 0


@dataclass
class DeclaredWithoutNsys:
    profiling: NoNsysProfiling | None = None


def test_ft_names_itself_when_the_declared_profiling_class_lacks_the_nsys_switch(tmp_path):
    """The section holds another class's config with nsys on, so FT must switch it off, but the
    declared class has no such field: the warning names the plugin, then fiddle refuses the section
    (setup changes nothing)."""
    task = run.Partial(foreign_pretrain, cfg=run.Config(DeclaredWithoutNsys))
    task.cfg.profiling = run.Config(ProfilingConfig, use_nsys_profiler=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TypeError):
            FaultTolerancePlugin().setup(task, assigned(run.LocalExecutor(), tmp_path))
    assert [str(w.message) for w in caught if issubclass(w.category, ProfilingPluginWarning)][1] == (
        "FaultTolerancePlugin: tests.plugins.test_partial_sections.NoNsysProfiling has no field(s) "
        "['use_nsys_profiler']; not set"
    )
    assert task.cfg.profiling.__fn_or_cls__ is ProfilingConfig and task.cfg.profiling.use_nsys_profiler is True


def test_a_profiler_plugin_writes_bridge_plugins_class_where_only_the_fallback_tells(tmp_path):
    task = run.Partial(foreign_pretrain, cfg=run.Config(AnyProfiling))
    PyTorchProfilerPlugin(profile_step_start=1, profile_step_end=2).setup(task, assigned(run.LocalExecutor(), tmp_path))
    assert task.cfg.profiling.__fn_or_cls__ is ProfilingConfig
    assert (task.cfg.profiling.use_pytorch_profiler, task.cfg.profiling.profile_step_end) == (True, 2)

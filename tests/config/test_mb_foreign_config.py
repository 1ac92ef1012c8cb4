"""A Megatron Bridge ProfilingConfig handed to us: every field is carried over or named in a warning.

The two stand-in classes below copy the field names and defaults of Megatron Bridge's
``megatron.bridge.training.config.ProfilingConfig`` (Megatron Bridge is not installable here: it
needs Megatron Core and Transformer Engine): ``MB031ProfilingConfig`` as of 0.3.1, and
``MBMainProfilingConfig`` as on main, where it extends Megatron-LM's ProfilingConfig.
"""

from __future__ import annotations

import logging
import types
from dataclasses import dataclass, field

import pytest

from bridge_plugins import ProfilingConfig


@dataclass
class MB031ProfilingConfig:
    use_nsys_profiler: bool = False
    profile_step_start: int = 10
    profile_step_end: int = 12
    use_pytorch_profiler: bool = False
    profile_ranks: list[int] = field(default_factory=lambda: [0])
    record_memory_history: bool = False
    memory_snapshot_path: str = "snapshot.pickle"
    record_shapes: bool = False
    nvtx_ranges: bool = False


@dataclass(kw_only=True)
class MBMainProfilingConfig:
    use_nsys_profiler: bool = False
    profile_step_start: int = 10
    profile_step_end: int = 12
    use_pytorch_profiler: bool = False
    pytorch_profiler_collect_shapes: bool = False
    pytorch_profiler_collect_callstack: bool = False
    pytorch_profiler_collect_chakra: bool = False
    profile_ranks: list[int] = field(default_factory=lambda: [0])
    record_memory_history: bool = False
    memory_snapshot_path: str = "/nemo_run/snapshot.pickle"
    record_shapes: bool = False
    nvtx_ranges: bool = False
    # a field a later Megatron Bridge may add, which we do not know
    pytorch_profiler_with_flops: bool | None = None


@pytest.fixture
def warned(caplog):
    caplog.set_level(logging.WARNING, logger="bridge_plugins")
    return lambda: [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_main_fields_reach_our_config(warned):
    mb = MBMainProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=3,
        profile_step_end=6,
        pytorch_profiler_collect_shapes=True,
        pytorch_profiler_collect_callstack=True,
        pytorch_profiler_collect_chakra=True,
        profile_ranks=[0, 1],
        record_shapes=True,
    )
    cfg = ProfilingConfig.from_object(mb)
    assert cfg == ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=3,
        profile_step_end=6,
        pytorch_profiler_collect_shapes=True,
        pytorch_profiler_collect_callstack=True,
        pytorch_profiler_collect_chakra=True,
        profile_ranks=[0, 1],
        record_shapes=True,
        memory_snapshot_path="/nemo_run/snapshot.pickle",
    )
    assert warned() == []


def test_031_defaults_convert_without_warnings(warned):
    cfg = ProfilingConfig.from_object(MB031ProfilingConfig(use_nsys_profiler=True, nvtx_ranges=True))
    assert cfg.use_nsys_profiler and cfg.nvtx_ranges and cfg.memory_snapshot_path == "snapshot.pickle"
    assert warned() == []


def test_unknown_field_set_is_named_and_unknown_field_at_default_is_quiet(warned):
    ProfilingConfig.from_object(MBMainProfilingConfig(use_pytorch_profiler=True))
    assert warned() == []
    ProfilingConfig.from_object(MBMainProfilingConfig(use_pytorch_profiler=True, pytorch_profiler_with_flops=True))
    (msg,) = warned()
    assert "MBMainProfilingConfig.pytorch_profiler_with_flops=True is not supported" in msg and "ignored" in msg


def test_empty_ranks_with_memory_history_warns_of_the_different_meaning(warned):
    cfg = ProfilingConfig.from_object(MBMainProfilingConfig(record_memory_history=True, profile_ranks=[]))
    assert cfg.profile_ranks == [] and cfg.profiles_rank(7)
    assert any("profile_ranks=[] records memory history on every rank" in m for m in warned())


def test_relative_snapshot_path_warns_where_it_lands(warned):
    ProfilingConfig.from_object(MB031ProfilingConfig(record_memory_history=True))
    assert any(
        "memory_snapshot_path='snapshot.pickle' is relative: snapshots go to 'profiling/snapshot.pickle'" in m
        for m in warned()
    )


def test_nvtx_ranges_without_nsys_warns(warned):
    ProfilingConfig.from_object(MB031ProfilingConfig(use_pytorch_profiler=True, nvtx_ranges=True))
    assert any("nvtx_ranges=True does nothing without use_nsys_profiler" in m for m in warned())


def test_031_empty_window_is_rejected_naming_the_source():
    # Deliberate difference: MB 0.3.1 accepted end == start (then nsys never stopped and the torch
    # schedule asserted active > 0 inside the job); we reject it when the config is read.
    with pytest.raises(ValueError) as info:
        ProfilingConfig.from_object(
            MB031ProfilingConfig(use_nsys_profiler=True, profile_step_start=10, profile_step_end=10)
        )
    assert "MB031ProfilingConfig" in str(info.value) and "profile_step_end=10 must be greater" in str(info.value)


def test_omegaconf_node_mapping_and_namespace_sources(warned):
    from omegaconf import OmegaConf

    node = OmegaConf.structured(MBMainProfilingConfig(use_nsys_profiler=True, profile_ranks=[2, 3]))
    cfg = ProfilingConfig.from_object(node)
    assert cfg.profile_ranks == [2, 3] and type(cfg.profile_ranks) is list and cfg.use_nsys_profiler
    assert ProfilingConfig.from_object({"use_pytorch_profiler": True, "_target_": "x.Y"}).use_pytorch_profiler
    args = types.SimpleNamespace(use_pytorch_profiler=True, profile_ranks=(1,), profile=True)  # Megatron-LM-like
    assert ProfilingConfig.from_object(args).profile_ranks == [1]
    assert any("SimpleNamespace.profile=True is not supported" in m for m in warned())


def test_a_whole_container_is_refused_with_the_fix():
    @dataclass
    class Container:
        profiling: MBMainProfilingConfig = field(default_factory=MBMainProfilingConfig)

    with pytest.raises(TypeError, match=r"has none of ProfilingConfig's fields.*pass the profiling section"):
        ProfilingConfig.from_object(Container())
    with pytest.raises(TypeError, match="cannot read a profiling config from 5"):
        ProfilingConfig.from_object(5)


def test_controller_reads_megatron_bridge_container(warned):
    from bridge_plugins import ProfilingController

    @dataclass
    class MBContainer:
        profiling: MBMainProfilingConfig = field(default_factory=MBMainProfilingConfig)

    c = MBContainer(
        MBMainProfilingConfig(
            use_pytorch_profiler=True, pytorch_profiler_collect_callstack=True, pytorch_profiler_with_flops=True
        )
    )
    cfg = ProfilingController.from_config(c).config
    assert cfg.use_pytorch_profiler and cfg.pytorch_profiler_collect_callstack
    assert any("pytorch_profiler_with_flops=True is not supported" in m for m in warned())

"""What the controller reads where the job runs (its paths, its rank, the config it is given, the
NVTX emitter) and the lines it says about its window, each pinned to the exact value or line."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
import torch.distributed as dist

from bridge_plugins import ProfilingConfig
from bridge_plugins.config.conflicts import NSYS_UNDER_FT
from bridge_plugins.runtime import window_messages as msg
from bridge_plugins.runtime.config_input import config_from
from bridge_plugins.runtime.nvtx_ranges import find_nvtx
from bridge_plugins.runtime.paths import resolve_output_dir, resolve_snapshot_path
from bridge_plugins.runtime.ranks import detect_rank, detect_world_size
from bridge_plugins.runtime.steps import NOOP, StepScope
from recipes.config import ConfigContainer

CFG = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=3, profile_step_end=6)


def lines(caplog, level=logging.WARNING):
    return [r.getMessage() for r in caplog.records if r.levelno == level]


@pytest.mark.parametrize(
    "say,expected",
    [
        (
            lambda: msg.warn_never_reached(1, CFG, "the loop ended"),
            "rank 1: the profiling window (steps 3-5) was never reached: the loop ended before step 3; "
            "nothing was captured by the profilers",
        ),
        (
            lambda: msg.warn_past_unopened_window(2, 9, CFG),
            "rank 2: step 9 is past the profiling window (steps 3-5) that was never opened (a resume past it, "
            "or skipped steps): the profilers capture nothing; memory history, if on, is snapshotted now and stops",
        ),
        (
            lambda: msg.warn_started_inside(0, 4, CFG),
            "rank 0: the run starts at step 4, inside the profiling window (steps 3-5): capturing steps 4-5",
        ),
        (
            lambda: msg.log_window_closed(7, CFG, "SIGTERM", 3, 4),
            "rank 7: profiling window steps 3-5 closed early (SIGTERM): captured steps 3-4",
        ),
    ],
)
def test_each_window_warning_is_one_exact_line(caplog, say, expected):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    say()
    assert lines(caplog) == [expected] and lines(caplog, logging.INFO) == []


def test_a_window_that_ran_to_its_end_is_an_info_line(caplog):
    caplog.set_level(logging.INFO, logger="bridge_plugins")
    msg.log_window_closed(0, CFG, None, 3, 5)
    assert lines(caplog, logging.INFO) == ["rank 0: profiling window closed: captured steps 3-5"] and not lines(caplog)


def unchecked(**fields) -> ProfilingConfig:
    """A config whose fields were set after its own checks ran (as fdl or OmegaConf may hand one over)."""
    cfg = ProfilingConfig()
    for name, value in fields.items():
        setattr(cfg, name, value)
    return cfg


def test_output_dir_comes_from_the_config_then_the_environment_then_the_default(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BRIDGE_PLUGINS_OUTPUT_DIR", "from_env")
    assert resolve_output_dir(ProfilingConfig(output_dir="given")) == tmp_path / "given"
    assert resolve_output_dir(ProfilingConfig()) == tmp_path / "from_env"
    monkeypatch.delenv("BRIDGE_PLUGINS_OUTPUT_DIR")
    assert resolve_output_dir(ProfilingConfig()) == tmp_path / "profiling"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert resolve_output_dir(ProfilingConfig(output_dir="~/x/../y")) == tmp_path / "home" / "y"


@pytest.mark.parametrize(
    "value,message",
    [
        ("/a\0b", "ProfilingConfig.output_dir='/a\\x00b' contains a NUL byte; no file system accepts it"),
        (
            "~nosuchuser_bridge/x",
            "ProfilingConfig.output_dir='~nosuchuser_bridge/x': Could not determine home "
            "directory. (no such user's home); give a plain path",
        ),
    ],
)
def test_an_unusable_output_dir_is_one_exact_error(value, message):
    with pytest.raises(ValueError) as raised:
        resolve_output_dir(unchecked(output_dir=value))
    assert str(raised.value) == message


def test_an_output_dir_that_is_a_file_or_a_loop_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError) as raised:
        resolve_output_dir(ProfilingConfig(output_dir=str(tmp_path / "file")))
    assert str(raised.value) == (
        f"ProfilingConfig.output_dir={str(tmp_path / 'file')!r} is an existing file ({tmp_path / 'file'}); "
        "give a directory"
    )
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(ValueError, match=r"^ProfilingConfig.output_dir='.*loop' cannot be used: "):
        resolve_output_dir(ProfilingConfig(output_dir=str(tmp_path / "loop")))


def test_the_snapshot_path_is_under_the_output_dir_unless_absolute(tmp_path):
    out = tmp_path / "out"
    assert resolve_snapshot_path(ProfilingConfig(memory_snapshot_path="s/m.pickle"), out) == out / "s" / "m.pickle"
    assert resolve_snapshot_path(ProfilingConfig(memory_snapshot_path="/abs/m.pickle"), out) == Path("/abs/m.pickle")


@pytest.mark.parametrize("value", ["snaps/", ".", "..", "existing_dir"])
def test_a_snapshot_path_that_names_a_directory_is_one_exact_error(tmp_path, value):
    (tmp_path / "existing_dir").mkdir()
    with pytest.raises(ValueError) as raised:
        resolve_snapshot_path(unchecked(memory_snapshot_path=value), tmp_path)
    assert str(raised.value) == (
        f"ProfilingConfig.memory_snapshot_path={value!r} names a directory ({tmp_path / value}); give a file "
        f"inside it, e.g. {str(Path(value) / 'memory_snapshot.pickle')!r}"
    )


def test_a_nul_in_the_snapshot_path_names_its_field():
    with pytest.raises(ValueError) as raised:
        resolve_snapshot_path(unchecked(memory_snapshot_path="a\0"), Path("/o"))
    assert (
        str(raised.value)
        == "ProfilingConfig.memory_snapshot_path='a\\x00' contains a NUL byte; no file system accepts it"
    )


def test_a_process_group_outranks_the_environment(monkeypatch):
    monkeypatch.setenv("RANK", "5")
    monkeypatch.setenv("WORLD_SIZE", "9")
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert (detect_rank(), detect_world_size()) == (0, 1)
    finally:
        dist.destroy_process_group()
    assert (detect_rank(), detect_world_size()) == (5, 9)


def test_a_blank_variable_is_skipped(monkeypatch):
    for var, value in {
        "RANK": " ",
        "SLURM_PROCID": "2",
        "WORLD_SIZE": "",
        "SLURM_STEP_NUM_TASKS": " \t",
        "SLURM_NTASKS": "6",
    }.items():
        monkeypatch.setenv(var, value)
    assert (detect_rank(), detect_world_size()) == (2, 6)


def test_what_from_config_cannot_read_is_one_exact_type_error():
    with pytest.raises(TypeError) as raised:
        config_from(object())
    assert str(raised.value) == (
        "ProfilingController.from_config got object: pass a config container with a .profiling section, a "
        "ProfilingConfig, a mapping of its fields, or None"
    )


def test_nsys_under_fault_tolerance_is_switched_off_with_one_exact_line(caplog):
    c = ConfigContainer()
    c.profiling = ProfilingConfig(use_nsys_profiler=True)
    c.ft.enable_ft_package = True
    assert config_from(c).use_nsys_profiler is False
    (line,) = lines(caplog)
    assert line == (
        f"fault tolerance is enabled (ft.enable_ft_package=True): nsys profiling is disabled for this job: {NSYS_UNDER_FT}"
    )
    c.profiling, c.ft = None, None
    assert config_from(c) is None
    c.profiling = ProfilingConfig(use_nsys_profiler=True)
    assert config_from(c).use_nsys_profiler is True  # no ft section: no fault tolerance


def test_an_object_with_one_profiling_field_name_is_read_as_a_profiling_config():
    class Theirs:
        def __init__(self):
            self.profile_step_end = 19

    assert config_from(Theirs()).profile_step_end == 19


def test_the_step_scopes_never_swallow_an_exception():
    with pytest.raises(KeyError), NOOP:
        raise KeyError("x")
    assert NOOP.__enter__() is None

    class Window:
        calls = []

        def _enter_step(self, step):
            self.calls.append(("enter", step))

        def _exit_step(self, step, exc_type):
            self.calls.append(("exit", step, exc_type))

    scope = StepScope(Window())
    assert scope.step == -1
    scope.step = 4
    with pytest.raises(KeyError), scope:
        raise KeyError("x")
    assert Window.calls == [("enter", 4), ("exit", 4, KeyError)]


def test_nvtx_comes_from_the_package_here():
    ranges = find_nvtx()
    assert ranges.source == "nvtx" and ranges.available
    ranges.push("bridge_plugins.test")
    ranges.pop()


def test_without_the_nvtx_package_a_cpu_torch_has_none(monkeypatch):
    monkeypatch.setitem(sys.modules, "nvtx", None)  # an import of it raises ImportError
    ranges = find_nvtx()
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a CUDA build may emit NVTX here")
    assert (ranges.source, ranges.available) == (None, False)
    assert ranges.push("x") is None and ranges.pop() is None


@pytest.mark.parametrize("value", [".", ".."])
def test_a_dot_snapshot_path_is_refused_before_the_output_dir_exists(tmp_path, value):
    with pytest.raises(ValueError, match="names a directory"):
        resolve_snapshot_path(unchecked(memory_snapshot_path=value), tmp_path / "not_yet")


def test_without_the_nvtx_package_a_cuda_torch_emits_them(monkeypatch):
    """torch.cuda.nvtx stood in by recorders (a CUDA build of torch; this one raises): probed once, then used."""
    import torch

    calls = []
    push, pop = (lambda name: calls.append(("push", name))), (lambda: calls.append(("pop",)))
    monkeypatch.setitem(sys.modules, "nvtx", None)
    monkeypatch.setattr(torch.cuda.nvtx, "range_push", push)
    monkeypatch.setattr(torch.cuda.nvtx, "range_pop", pop)
    ranges = find_nvtx()
    assert (ranges.source, ranges.available, ranges.push, ranges.pop) == ("torch.cuda.nvtx", True, push, pop)
    assert calls == [("push", "bridge_plugins.probe"), ("pop",)]

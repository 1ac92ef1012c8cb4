"""ProfilingController in one process with the recipe's real model and real torch.profiler traces.

Each Megatron Bridge gap that concerns the job side (numbered as in the team's prior-art review) has a test here:
both profilers' windows (1), resume (2), start == end (3, in test_config), early end (4),
[] for every feature (5), traces location (10), no process group needed (13).
"""

from __future__ import annotations

import logging
import os

import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from bridge_plugins.runtime.ranks import detect_rank, detect_world_size
from recipes.config import ConfigContainer
from tests.runtime.controller_support import run_loop
from tests.support import trace_files, trace_steps


def cfg(tmp_path, **kw):
    kw.setdefault("use_pytorch_profiler", True)
    return ProfilingConfig(output_dir=str(tmp_path), **kw)


@pytest.mark.parametrize("start,end", [(0, 3), (5, 9), (7, 8), (2, 6)])
def test_trace_holds_exactly_the_window(tmp_path, train_step, start, end):
    ctl = run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=start, profile_step_end=end), rank=0),
        train_step,
        range(12),
    )
    files = trace_files(tmp_path)
    assert list(files) == [0] and len(files[0]) == 1
    path = files[0][0]
    assert path.name == f"rank0_steps{start}-{end - 1}.pt.trace.json.gz"
    assert trace_steps(path) == set(range(start, end))
    assert ctl.artifacts == [path]
    assert ctl.captured_steps == range(start, end)


def test_one_log_line_per_artifact_with_path_size_and_time(tmp_path, train_step, caplog):
    ctl = run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=1, profile_step_end=3), rank=0), train_step, range(4)
    )
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("wrote ")]
    assert len(lines) == 1
    assert str(ctl.artifacts[0]) in lines[0] and " KiB)" in lines[0] and lines[0].endswith(" s")


def test_unselected_rank_does_no_profiling_work(tmp_path, train_step):
    out = tmp_path / "out"
    ctl = run_loop(
        ProfilingController(
            cfg(out, profile_step_start=0, profile_step_end=2, profile_ranks=[0]), rank=1, world_size=2
        ),
        train_step,
        range(3),
    )
    assert not ctl.selected
    assert not out.exists()  # not even the directory
    assert ctl.artifacts == [] and ctl._windows == [] and ctl._window is None


def test_empty_ranks_list_selects_every_rank(tmp_path, train_step):
    ctl = run_loop(
        ProfilingController(
            cfg(tmp_path, profile_step_start=1, profile_step_end=2, profile_ranks=[]), rank=3, world_size=4
        ),
        train_step,
        range(3),
    )
    assert ctl.selected
    assert trace_steps(trace_files(tmp_path)[3][0]) == {1}


def test_rank_outside_the_world_is_warned_about(tmp_path, train_step, caplog):
    run_loop(
        ProfilingController(
            cfg(tmp_path, profile_step_start=0, profile_step_end=1, profile_ranks=[0, 5]), rank=0, world_size=2
        ),
        train_step,
        range(1),
    )
    msgs = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("[5]" in m and "outside the world of 2" in m for m in msgs), msgs


def warnings_of(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_loop_ending_inside_the_window_writes_what_was_captured(tmp_path, train_step, caplog):
    ctl = run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=4, profile_step_end=10), rank=0), train_step, range(7)
    )
    path = trace_files(tmp_path)[0][0]
    assert path.name == "rank0_steps4-6.pt.trace.json.gz"
    assert trace_steps(path) == {4, 5, 6}
    assert any("closed early" in m and "captured steps 4-6" in m for m in warnings_of(caplog))
    assert ctl.captured_steps == range(4, 7)


@pytest.mark.parametrize("exc", [ValueError, KeyboardInterrupt])
def test_exception_inside_the_window_writes_a_complete_trace(tmp_path, train_step, caplog, exc):
    with pytest.raises(exc):
        run_loop(
            ProfilingController(cfg(tmp_path, profile_step_start=4, profile_step_end=8), rank=0),
            train_step,
            range(10),
            fail_at=5,
            exc=exc,
        )
    path = trace_files(tmp_path)[0][0]
    assert trace_steps(path) == {4, 5}  # loads as complete gzip JSON
    assert any(f"{exc.__name__} raised in step 5" in m and "captured steps 4-5" in m for m in warnings_of(caplog))


def test_exception_before_the_window_warns_that_nothing_was_captured(tmp_path, train_step, caplog):
    with pytest.raises(RuntimeError):
        run_loop(
            ProfilingController(cfg(tmp_path, profile_step_start=4, profile_step_end=8), rank=0),
            train_step,
            range(10),
            fail_at=1,
            exc=RuntimeError,
        )
    assert trace_files(tmp_path) == {}
    assert any("never reached: RuntimeError raised before step 4" in m for m in warnings_of(caplog))


def test_resume_inside_the_window_captures_the_rest(tmp_path, train_step, caplog):
    ctl = run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=4, profile_step_end=9), rank=0), train_step, range(6, 12)
    )
    assert trace_steps(trace_files(tmp_path)[0][0]) == {6, 7, 8}
    assert any(
        "starts at step 6, inside the profiling window" in m and "capturing steps 6-8" in m for m in warnings_of(caplog)
    )
    assert ctl.captured_steps == range(6, 9)


def test_resume_past_the_window_warns_and_captures_nothing(tmp_path, train_step, caplog):
    run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=4, profile_step_end=9), rank=0), train_step, range(12, 15)
    )
    assert trace_files(tmp_path) == {}
    assert any(
        "step 12 is past the profiling window (steps 4-8) that was never opened" in m for m in warnings_of(caplog)
    )


def test_loop_that_skips_past_the_window_end_closes_it(tmp_path, train_step, caplog):
    run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=3, profile_step_end=6), rank=0),
        train_step,
        range(0, 12, 2),
    )
    assert trace_steps(trace_files(tmp_path)[0][0]) == {4}
    assert any("step 6 came after step 4" in m for m in warnings_of(caplog))


def test_nsys_on_cpu_warns_once_and_does_not_crash(tmp_path, train_step, caplog):
    if torch.cuda.is_available():
        pytest.skip("checks the CPU-only path")
    ctl = run_loop(
        ProfilingController(
            cfg(tmp_path, use_pytorch_profiler=False, use_nsys_profiler=True, profile_step_start=1, profile_step_end=3),
            rank=0,
        ),
        train_step,
        range(5),
    )
    warns = [m for m in warnings_of(caplog) if "nsys" in m]
    assert len(warns) == 1 and "CUDA is not available" in warns[0]
    # the CPU capture range: the window's NVTX range, one ProfilerStep#N range per step (nvtx package)
    assert "'bridge_plugins.window'" in warns[0] and "from nvtx" in warns[0], warns[0]
    (nsys,) = ctl._window.backends
    assert nsys.ranges_emitted == 2 and not nsys.window_range_open
    assert ctl.artifacts == [] and ctl.captured_steps == range(1, 3)
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


def test_memory_history_on_cpu_warns_and_does_not_crash(tmp_path, train_step, caplog):
    if torch.cuda.is_available():
        pytest.skip("checks the CPU-only path")
    ctl = run_loop(
        ProfilingController(
            cfg(tmp_path, record_memory_history=True, profile_step_start=1, profile_step_end=3), rank=0
        ),
        train_step,
        range(4),
    )
    warns = [m for m in warnings_of(caplog) if "record_memory_history" in m]
    assert len(warns) == 1 and "CUDA is not available" in warns[0]
    # one story: no "snapshots go to" line before the warning; the warning names where it would have gone
    assert f"would have gone to {tmp_path / 'memory_snapshot_0.pickle'}" in warns[0]
    assert "go to" not in caplog.text
    # the PyTorch profiler still ran
    assert [p.name for p in ctl.artifacts] == ["rank0_steps1-2.pt.trace.json.gz"]
    assert not any(r.levelno >= logging.ERROR for r in caplog.records)


@pytest.mark.parametrize("background", [True, False], ids=["background_export", "sync_export"])
def test_unwritable_output_dir_is_an_error_not_a_crash(tmp_path, train_step, caplog, background):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=1,
        profile_step_end=3,
        output_dir=str(blocker / "sub"),
        background_export=background,
    )
    ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(5))  # training completes
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "Not a directory" in errors[0] and "training continues" in errors[0], errors
    assert ctl.artifacts == []
    assert list(tmp_path.iterdir()) == [blocker]


def test_trace_is_written_beside_training_and_joined_at_exit(tmp_path, train_step, caplog):
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=2, profile_step_end=5, output_dir=str(tmp_path))
    ctl = ProfilingController(cfg, rank=0)
    with ctl:
        for i in range(8):
            with ctl.step(i):
                train_step()
    # after exit the export is complete and listed, and it ran on the export thread
    assert trace_steps(ctl.artifacts[0]) == {2, 3, 4}
    wrote = [r for r in caplog.records if r.getMessage().startswith("wrote PyTorch trace")]
    assert len(wrote) == 1 and wrote[0].threadName == "bridge_plugins-export-rank0"
    assert not [t for t in __import__("threading").enumerate() if t.name.startswith("bridge_plugins-export")]


def test_sync_export_writes_on_the_training_thread(tmp_path, train_step, caplog):
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        profile_step_start=2,
        profile_step_end=4,
        output_dir=str(tmp_path),
        background_export=False,
    )
    ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(5))
    wrote = [r for r in caplog.records if r.getMessage().startswith("wrote PyTorch trace")]
    assert len(wrote) == 1 and wrote[0].threadName == "MainThread"
    assert trace_steps(ctl.artifacts[0]) == {2, 3}


def test_restarted_job_never_overwrites_an_earlier_attempt(tmp_path, train_step, monkeypatch):
    c = dict(profile_step_start=1, profile_step_end=2)
    first = run_loop(ProfilingController(cfg(tmp_path, **c), rank=0), train_step, range(3)).artifacts[0]
    before = first.read_bytes()
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "1")
    second = run_loop(ProfilingController(cfg(tmp_path, **c), rank=0), train_step, range(3)).artifacts[0]
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    third = run_loop(ProfilingController(cfg(tmp_path, **c), rank=0), train_step, range(3)).artifacts[0]
    monkeypatch.delenv("TORCHELASTIC_RESTART_COUNT")
    monkeypatch.delenv("SLURM_RESTART_COUNT")
    fourth = run_loop(ProfilingController(cfg(tmp_path, **c), rank=0), train_step, range(3)).artifacts[0]
    assert [p.name for p in (first, second, third, fourth)] == [
        "rank0_steps1-1.pt.trace.json.gz",
        "rank0_steps1-1_restart1.pt.trace.json.gz",
        "rank0_steps1-1_requeue2_restart1.pt.trace.json.gz",
        "rank0_steps1-1.1.pt.trace.json.gz",  # same name again: a new one, never a replacement
    ]
    assert first.read_bytes() == before
    # nothing half-written is left behind
    assert sorted(p.name for p in (tmp_path / "torch_profile").iterdir()) == sorted(
        p.name for p in (first, second, third, fourth)
    )


def test_default_output_dir_is_profiling_under_the_working_directory(tmp_path, train_step, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ctl = run_loop(
        ProfilingController(
            ProfilingConfig(use_pytorch_profiler=True, profile_step_start=0, profile_step_end=1), rank=0
        ),
        train_step,
        range(1),
    )
    assert ctl.artifacts == [tmp_path / "profiling" / "torch_profile" / "rank0_steps0-0.pt.trace.json.gz"]


def test_record_shapes_reaches_the_pytorch_profiler(tmp_path, train_step):
    import gzip
    import json

    def has_shapes(path):
        with gzip.open(path, "rt") as f:
            events = json.load(f)["traceEvents"]
        return any("Input Dims" in (e.get("args") or {}) for e in events)

    a = run_loop(
        ProfilingController(cfg(tmp_path / "a", profile_step_start=0, profile_step_end=1, record_shapes=True), rank=0),
        train_step,
        range(1),
    )
    b = run_loop(
        ProfilingController(cfg(tmp_path / "b", profile_step_start=0, profile_step_end=1), rank=0), train_step, range(1)
    )
    assert has_shapes(a.artifacts[0]) and not has_shapes(b.artifacts[0])


def test_from_config_accepts_container_profiling_config_none_and_foreign_shapes(tmp_path):
    from dataclasses import dataclass, field

    assert ProfilingController.from_config(None).config is None
    p = ProfilingConfig(use_pytorch_profiler=True)
    assert ProfilingController.from_config(p).config is p
    c = ConfigContainer()
    c.profiling = p
    assert ProfilingController.from_config(c).config is p

    @dataclass
    class TheirProfilingConfig:  # Megatron Bridge's has these names plus fields we do not know
        use_pytorch_profiler: bool = True
        profile_step_start: int = 3
        profile_step_end: int = 5
        profile_ranks: list = field(default_factory=lambda: [0, 1])
        pytorch_profiler_collect_chakra: bool = False

    @dataclass
    class TheirContainer:
        profiling: TheirProfilingConfig = field(default_factory=TheirProfilingConfig)

    got = ProfilingController.from_config(TheirContainer()).config
    assert (got.use_pytorch_profiler, got.profile_step_start, got.profile_step_end, got.profile_ranks) == (
        True,
        3,
        5,
        [0, 1],
    )


def test_inert_controller_without_profiling(train_step):
    ctl = run_loop(ProfilingController.from_config(ConfigContainer()), train_step, range(3))
    assert ctl.artifacts == [] and not ctl.selected


def test_fault_tolerance_disables_nsys_with_a_warning(caplog):
    c = ConfigContainer()
    c.profiling = ProfilingConfig(use_nsys_profiler=True, record_memory_history=True)
    c.ft.enable_ft_package = True
    ctl = ProfilingController.from_config(c)
    assert ctl.config.use_nsys_profiler is False and ctl.config.record_memory_history is True
    assert any("fault tolerance is enabled" in m and "nsys" in m for m in warnings_of(caplog))
    c.ft.enable_ft_package = False
    assert ProfilingController.from_config(c).config.use_nsys_profiler is True


def test_controller_validates_configs_built_without_post_init():
    bad = ProfilingConfig()
    bad.use_nsys_profiler = bad.use_pytorch_profiler = True  # what fdl/OmegaConf could hand over
    with pytest.raises(ValueError, match="mutually exclusive"):
        ProfilingController(bad)


def test_rank_detection_without_a_process_group(monkeypatch):
    for var in ("RANK", "SLURM_PROCID", "WORLD_SIZE", "SLURM_NTASKS", "SLURM_STEP_NUM_TASKS"):
        monkeypatch.delenv(var, raising=False)
    assert (detect_rank(), detect_world_size()) == (0, 1)
    monkeypatch.setenv("SLURM_PROCID", "3")
    monkeypatch.setenv("SLURM_NTASKS", "8")  # the allocation
    monkeypatch.setenv("SLURM_STEP_NUM_TASKS", "4")  # this srun step
    assert (detect_rank(), detect_world_size()) == (3, 4)
    monkeypatch.setenv("RANK", "1")  # torchrun under Slurm: every task has SLURM_PROCID=0
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert (detect_rank(), detect_world_size()) == (1, 2)


def test_rank_is_read_from_the_environment(tmp_path, train_step, monkeypatch):
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "4")
    run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=0, profile_step_end=1, profile_ranks=[2])),
        train_step,
        range(1),
    )
    assert list(trace_files(tmp_path)) == [2]


def test_job_side_never_imports_nemo_run():
    import subprocess
    import sys

    code = (
        "import sys, bridge_plugins.runtime, recipes.train; from bridge_plugins import ProfilingController; "
        "import bridge_plugins.runtime.on_demand, bridge_plugins.runtime.registry as r; "
        "[__import__(e.factory.split(':')[0]) for e in r.BACKENDS]; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('nemo_run', 'fiddle', 'torchx')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_sigterm_handler_is_chained_and_a_later_owner_is_left_alone(tmp_path, train_step):
    import signal

    original = signal.getsignal(signal.SIGTERM)

    calls = []

    def user_handler(signum, frame):
        calls.append(signum)

    try:
        ctl = ProfilingController(cfg(tmp_path, profile_step_start=1, profile_step_end=3), rank=0)
        with ctl:
            ours = signal.getsignal(signal.SIGTERM)
            assert callable(ours) and ours is not original  # ours from entry
            for i in range(4):
                with ctl.step(i):
                    train_step()
                    if i == 2:
                        signal.signal(signal.SIGTERM, user_handler)  # the job takes SIGTERM over
        assert signal.getsignal(signal.SIGTERM) is user_handler  # not clobbered on exit
        ctl2 = ProfilingController(cfg(tmp_path / "b", profile_step_start=0, profile_step_end=2), rank=0)
        with ctl2, ctl2.step(0):
            train_step()
            os.kill(os.getpid(), signal.SIGTERM)  # ours writes what was captured, then chains
        assert calls == [signal.SIGTERM]  # the user's handler ran, once
        assert [p.name for p in ctl2.artifacts] == ["rank0_steps0-0.pt.trace.json.gz"]
        assert signal.getsignal(signal.SIGTERM) is user_handler  # restored to what it was
    finally:
        signal.signal(signal.SIGTERM, original)


def test_a_window_inside_the_loop_closes_on_time_without_any_warning(tmp_path, train_step, caplog):
    """Closing a normal window one step late would warn "closed early" on every run."""
    ctl = run_loop(
        ProfilingController(cfg(tmp_path, profile_step_start=2, profile_step_end=5), rank=0), train_step, range(8)
    )
    assert warnings_of(caplog) == []
    assert ctl.captured_steps == range(2, 5)
    assert trace_steps(trace_files(tmp_path)[0][0]) == {2, 3, 4}

"""Fault injection, issues 7.6-7.8 (job side): bad paths, an enclosing user profiler, weak spots.

Training must always go on: a path the job cannot use is an error line naming the value and the
fix, never a traceback out of ``with controller:``.
"""

from __future__ import annotations

import logging

import pytest
import torch

from bridge_plugins import ProfilingConfig, ProfilingController
from tests.runtime.controller_support import run_loop
from tests.support import trace_files, trace_steps


def errors_of(caplog):
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]


def controller_with(tmp_path, **bad):
    """A controller whose config holds ``bad`` (set after construction, as fiddle/OmegaConf may);
    None when the controller refuses it at construction (also acceptable: a clear error)."""
    cfg = ProfilingConfig(
        use_pytorch_profiler=True,
        record_memory_history=True,
        profile_step_start=1,
        profile_step_end=3,
        output_dir=str(tmp_path / "out"),
    )
    for k, v in bad.items():
        setattr(cfg, k, v)
    try:
        return ProfilingController(cfg, rank=0)
    except (ValueError, TypeError) as e:
        assert any(k in str(e) for k in bad), e
        return None


@pytest.mark.parametrize(
    "bad",
    [
        dict(output_dir="/tmp/a\0b"),
        dict(output_dir="~nosuchuser_bridge/x"),
        dict(memory_snapshot_path="~"),
        dict(memory_snapshot_path="."),
        dict(memory_snapshot_path="snap\0.pickle"),
    ],
    ids=["output_nul", "output_nosuchuser", "snapshot_home", "snapshot_dot", "snapshot_nul"],
)
def test_unusable_paths_never_crash_training(tmp_path, train_step, caplog, bad):
    ctl = controller_with(tmp_path, **bad)
    if ctl is None:
        return
    ran = []
    with ctl:
        for i in range(4):
            with ctl.step(i):
                train_step()
                ran.append(i)
    assert ran == [0, 1, 2, 3]
    errors = errors_of(caplog)
    (value,) = bad.values()
    assert len(errors) == 1 and repr(value) in errors[0] and "training continues" in errors[0], errors
    if "memory_snapshot_path" in bad:  # only the backend with the bad path is off; the trace is written
        assert trace_steps(trace_files(tmp_path / "out")[0][0]) == {1, 2}


def test_output_dir_that_is_a_file_is_an_entry_error(tmp_path, train_step, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    ctl = controller_with(tmp_path)
    ctl.config.output_dir = str(blocker)
    run_loop(ctl, train_step, range(3))
    (err,) = errors_of(caplog)
    assert "existing file" in err and str(blocker) in err and "training continues" in err
    assert blocker.read_text() == "x"


def test_an_enclosing_user_profiler_session_is_left_alone(tmp_path, train_step, caplog):
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(tmp_path))
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as theirs:
        ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(4))
    names = {e.name for e in theirs.events()}
    assert "aten::mm" in names or "aten::addmm" in names, sorted(names)[:20]  # their profile is not emptied
    assert ctl.artifacts == []
    assert any(
        "torch.profiler session opened outside bridge_plugins" in m
        for m in [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    )
    assert errors_of(caplog) == []


def test_malformed_restart_counter_is_ignored_and_the_trace_kept(tmp_path, train_step, monkeypatch):
    monkeypatch.setenv("SLURM_RESTART_COUNT", "abc")
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "-1")
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=1, profile_step_end=3, output_dir=str(tmp_path))
    ctl = run_loop(ProfilingController(cfg, rank=0), train_step, range(4))
    assert [p.name for p in ctl.artifacts] == ["rank0_steps1-2.pt.trace.json.gz"]
    assert trace_steps(ctl.artifacts[0]) == {1, 2}


def test_from_config_accepts_mappings_and_refuses_what_it_cannot_read(tmp_path):
    fields = dict(use_pytorch_profiler=True, profile_step_start=2, profile_step_end=4, output_dir=str(tmp_path))
    for given in (fields, {"profiling": fields}):
        got = ProfilingController.from_config(given).config
        assert (got.use_pytorch_profiler, got.profile_step_start, got.profile_step_end) == (True, 2, 4)
    with pytest.raises(TypeError, match="no_such_field"):
        ProfilingController.from_config({"no_such_field": 1})
    with pytest.raises(TypeError, match="from_config got int"):
        ProfilingController.from_config(3)


def test_steps_going_back_close_the_window_so_the_name_matches_the_content(tmp_path, train_step, caplog):
    cfg = ProfilingConfig(use_pytorch_profiler=True, profile_step_start=2, profile_step_end=5, output_dir=str(tmp_path))
    run_loop(ProfilingController(cfg, rank=0), train_step, [3, 2, 3, 4, 5])
    (path,) = trace_files(tmp_path)[0]
    assert path.name == "rank0_steps3-3.pt.trace.json.gz"
    assert trace_steps(path) == {3}
    assert any("step 2 came after step 3, going back" in r.getMessage() for r in caplog.records)

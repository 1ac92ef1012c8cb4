"""Odd but legal values (issue 19.2): ``pathlib.Path`` values become str at construction and reach
the job through real ``exp.add``/``dryrun``; non-finite floats and ints past int64 are refused by name."""

from __future__ import annotations

import math
from pathlib import Path

import nemo_run as run
import pytest

from bridge_plugins import FaultTolerancePlugin, NsysPlugin, ProfilingConfig, PyTorchProfilerPlugin
from recipes.tiny_gpt import tiny_gpt_recipe, tiny_gpt_script
from tests.launch_support import dryrun, local_argv, packaged_profiling, script_tail

pytestmark = pytest.mark.usefixtures("nemo_home")


@pytest.mark.parametrize("cls", [PyTorchProfilerPlugin, NsysPlugin])
def test_path_values_are_str_after_construction(cls):
    kw = dict(memory_snapshot_path=Path("snaps/s.pickle")) if cls is PyTorchProfilerPlugin else {}
    plugin = cls(output_dir=Path("/data/my run"), **kw)
    assert type(plugin.output_dir) is str and plugin.output_dir == "/data/my run"
    if kw:
        assert type(plugin.memory_snapshot_path) is str and plugin.memory_snapshot_path == "snaps/s.pickle"


def test_profiling_config_path_values_are_str():
    cfg = ProfilingConfig(output_dir=Path("/data/x"), memory_snapshot_path=Path("m.pickle"))
    assert (type(cfg.output_dir), type(cfg.memory_snapshot_path)) == (str, str)


def _plugin():
    return PyTorchProfilerPlugin(
        output_dir=Path("/data/my run"), memory_snapshot_path=Path("s.pickle"), record_memory_history=True
    )


def test_path_values_through_a_partial_dryrun():
    exp = dryrun(tiny_gpt_recipe(), run.LocalExecutor(ntasks_per_node=1, launcher="torchrun"), [_plugin()])
    cfg = packaged_profiling(exp.jobs[0])
    assert (cfg.output_dir, cfg.memory_snapshot_path) == ("/data/my run", "s.pickle")


def test_path_values_through_a_script_dryrun():
    exp = dryrun(tiny_gpt_script(), run.LocalExecutor(ntasks_per_node=1, launcher="torchrun"), [_plugin()])
    tail = script_tail(local_argv(exp.jobs[0]))
    assert any("profiling.output_dir=" in a and "/data/my run" in a for a in tail), tail
    assert any("profiling.memory_snapshot_path=" in a and "s.pickle" in a for a in tail), tail
    assert not any("PosixPath" in a for a in tail)


@pytest.mark.parametrize(
    "cls,kwargs,message",
    [
        (
            FaultTolerancePlugin,
            dict(rank_heartbeat_timeout=math.nan),
            "FaultTolerancePlugin.rank_heartbeat_timeout=nan",
        ),
        (
            FaultTolerancePlugin,
            dict(initial_rank_heartbeat_timeout=math.inf),
            "FaultTolerancePlugin.initial_rank_heartbeat_timeout=inf",
        ),
        (FaultTolerancePlugin, dict(num_in_job_restarts=2**63), "FaultTolerancePlugin.num_in_job_restarts="),
        (
            PyTorchProfilerPlugin,
            dict(memory_history_max_entries=10**20),
            "PyTorchProfilerPlugin.memory_history_max_entries=100000000000000000000",
        ),
        (PyTorchProfilerPlugin, dict(profile_step_end=2**63), "PyTorchProfilerPlugin.profile_step_end="),
        (NsysPlugin, dict(profile_ranks=[0, 2**64]), "NsysPlugin.profile_ranks="),
        (ProfilingConfig, dict(profile_step_start=2**63, profile_step_end=2**63 + 1), "profile_step_start="),
    ],
)
def test_non_finite_and_too_large_numbers_are_refused_by_name(cls, kwargs, message):
    with pytest.raises(ValueError) as e:
        cls(**kwargs)
    assert message in str(e.value)
    assert "int64" in str(e.value) or "finite" in str(e.value)


def test_the_largest_int64_is_still_accepted():
    assert ProfilingConfig(profile_step_start=0, profile_step_end=2**63 - 1).profile_step_end == 2**63 - 1

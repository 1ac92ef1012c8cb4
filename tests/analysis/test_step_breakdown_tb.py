"""The per-step breakdown against torch-tb-profiler 0.4.3's overview, step by step.

The plugin reads torch 1.8-1.9's categories only (0.4.3 has no ``cuda_runtime``), so each real GPU
trace is given to it in that format (tests/fixtures/old_format.py), as recorded, input-bound (a third
of each step in a DataLoader fetch) and "with workers" (1 %).
"""

from __future__ import annotations

import logging
import os

import pytest

from bridge_plugins.analysis.analyzers.step_breakdown import parts_of
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import FIXTURES
from tests.fixtures.old_format import load, save, to_old_format, with_data_loading

try:
    import torch_tb_profiler.profiler.data  # noqa: F401

    from tests.analysis.tb_reference import dataloader_share, tb_steps
except ImportError:  # CI installs it; a developer without it is told how
    if os.environ.get("CI"):
        raise
    pytest.skip("torch-tb-profiler not installed: run scripts/install_tbprofiler.sh", allow_module_level=True)

VARIANTS = {"recorded": None, "input_bound": 1 / 3, "with_workers": 0.01}
PUBLIC = FIXTURES.parent / "public-traces"
PUBLIC_WITH_STEPS = ["amd_trace__", "cpu_only__", "critical_path__", "negative_queue_", "ns_resolution_", "triton_"]


@pytest.fixture(scope="module", autouse=True)
def quiet_plugin():
    logging.getLogger("torch_tb_profiler").setLevel(logging.ERROR)  # a warning per unmatched runtime call


def _agree(path, tmp_path) -> None:
    theirs = tb_steps(path, tmp_path)
    ours = {s.step: parts_of(s.breakdown) for s in summarize([path]).traces[0].per_step}
    assert theirs and set(theirs) <= set(ours)
    for n, row in theirs.items():
        for key, value in row.items():  # within 1 % of the step (they agree to the microsecond today)
            assert ours[n][key] == pytest.approx(value, abs=0.01 * row["step_us"]), (n, key)


@pytest.mark.slow  # the plugin takes ~3 s on job2
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["job2_rank0", "job128_rank0", "job128_rank1"])
def test_each_step_splits_as_the_plugin_splits_it(name, variant, tmp_path):
    trace = to_old_format(load(FIXTURES / f"{name}.json.gz"))
    if VARIANTS[variant] is not None:
        trace = with_data_loading(trace, VARIANTS[variant])
    path = save(trace, tmp_path / f"{name}_{variant}.json.gz")
    _agree(path, tmp_path)
    share = dataloader_share(path, tmp_path)
    found = [f for f in summarize([path]).findings if f.kind == "input_bound"]
    if variant == "input_bound":  # the plugin's DataLoader share, and ours within 5 points of it
        assert share == pytest.approx(1 / 3, abs=0.01)
        assert found[0].share_of_step == pytest.approx(share, abs=0.05)
    else:
        assert share < 0.05 and found == []


@pytest.mark.slow  # the plugin on up to 100k events
@pytest.mark.parametrize("prefix", PUBLIC_WITH_STEPS)
def test_the_public_traces_split_as_the_plugin_splits_them(prefix, tmp_path):
    """ROCm, CPU-only, event syncs, 872 kernels launched before the trace (negative_queue), ns
    timestamps, Triton: every part of every step within 1 % (0.006 % at most today)."""
    (src,) = PUBLIC.glob(f"{prefix}*.json.gz")
    _agree(save(to_old_format(load(src)), tmp_path / "rank0.json.gz"), tmp_path)

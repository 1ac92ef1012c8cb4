"""input_bound on a real GPU trace made input-bound, in the torch 1.9 format the issue met it in.

job2's rank 0 (A100, launch-bound: host_bound before issue 31 was all diagnose said) rewritten with
torch 1.9's categories and a DataLoader fetch taking a third of every step while the GPU idles
(tests/fixtures/old_format.py); "with workers", the fetch takes 1 % of the step.
"""

from __future__ import annotations

import functools

import pytest

from bridge_plugins.analysis.summarize import summarize
from tests.analysis.test_fixtures import FIXTURES
from tests.fixtures.old_format import DATALOADER, load, save, to_old_format, with_data_loading


@functools.cache
def _job2_19() -> dict:
    return to_old_format(load(FIXTURES / "job2_rank0.json.gz"))


def diagnosed(tmp_path, share: float) -> dict:
    return summarize([save(with_data_loading(_job2_19(), share), tmp_path / "rank0.json.gz")], top=None)


def test_a_third_of_each_step_in_the_data_loader_is_input_bound_ranked_first(tmp_path):
    s = diagnosed(tmp_path, 1 / 3)
    first = s["findings"][0]
    assert first.kind == "input_bound" and first.severity == "high"
    assert first.share_of_step == pytest.approx(1 / 3, abs=0.05)  # torch-tb-profiler: 33.3 % (test_step_breakdown_tb)
    assert first.evidence["input_span"] == DATALOADER
    assert first.evidence["gpu_during_the_wait"].startswith("idle")
    assert "num_workers" in first.advice[0] and "pin_memory" in first.advice[0]
    (host,) = [f for f in s["findings"] if f.kind == "host_bound"]  # still launch-bound, on what is left
    assert host.time_us_per_step < 167_019  # what it claimed on job2 as recorded, before the loader was added
    for step in s["traces"][0]["per_step"]:
        assert step["breakdown"]["dataloader_us"] == pytest.approx(step["input_wait_us"], rel=0.01)


def test_the_same_run_with_workers_has_no_input_bound(tmp_path):
    s = diagnosed(tmp_path, 0.01)
    assert [f for f in s["findings"] if f.kind == "input_bound"] == []
    assert s["findings"][0].kind == "host_bound"

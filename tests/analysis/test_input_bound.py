"""input_bound on a real GPU trace made input-bound, in the torch 1.9 format the issue met it in.

job2's rank 0 (A100, launch-bound: host_bound before issue 31 was all diagnose said) rewritten with
torch 1.9's categories and a DataLoader fetch taking a third of every step while the GPU idles
(tests/fixtures/old_format.py); "with workers", the fetch takes 1 % of the step.
"""

from __future__ import annotations

import json

import pytest

from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import job2_torch19
from tests.fixtures.old_format import DATALOADER, save, with_data_loading


def diagnosed(tmp_path, share: float) -> dict:
    return summarize([save(with_data_loading(job2_torch19(), share), tmp_path / "rank0.json.gz")], top=None)


def test_a_third_of_each_step_in_the_data_loader_is_input_bound_ranked_first(tmp_path):
    s = diagnosed(tmp_path, 1 / 3)
    first = s.findings[0]
    assert first.kind == "input_bound" and first.severity == "high"
    assert first.share_of_step == pytest.approx(1 / 3, abs=0.05)  # torch-tb-profiler: 33.3 % (test_step_breakdown_tb)
    assert first.evidence["input_span"] == DATALOADER
    assert first.evidence["gpu_during_the_wait"].startswith("idle")
    assert "num_workers" in first.advice[0] and "pin_memory" in first.advice[0]
    (host,) = [f for f in s.findings if f.kind == "host_bound"]  # still launch-bound, on what is left
    assert host.time_us_per_step < 167_019  # what it claimed on job2 as recorded, before the loader was added
    for step in s.traces[0].per_step:
        assert step.breakdown.dataloader_us == pytest.approx(step.input_wait_us, rel=0.01)


def test_the_same_run_with_workers_has_no_input_bound(tmp_path):
    s = diagnosed(tmp_path, 0.01)
    assert [f for f in s.findings if f.kind == "input_bound"] == []
    assert s.findings[0].kind == "host_bound"


@pytest.mark.parametrize(
    "cat,name",
    [
        ("python_function", "megatron/training/training.py(201): get_batch"),  # recorded with_stack
        ("user_annotation", "next(data_iterator)"),
    ],
)
def test_a_megatron_style_data_fetch_is_an_input_wait(cat, name, tmp_path):
    """A hand-written three-step CPU trace (a stand-in: no Megatron run here) whose steps spend
    60 of 100 us in Megatron's data fetch, as a Python frame or a record_function span."""
    events = []
    for i in range(3):
        t = 1000.0 + 100 * i
        events += [
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{i}",
                "pid": 1,
                "tid": 1,
                "ts": t,
                "dur": 100.0,
            },
            {"ph": "X", "cat": cat, "name": name, "pid": 1, "tid": 1, "ts": t + 5, "dur": 60.0},
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": t + 70, "dur": 25.0},
        ]
    path = tmp_path / "rank0.json"
    path.write_text(json.dumps({"traceEvents": events}))
    s = summarize([path])
    assert [p.input_wait_us for p in s.traces[0].per_step] == [60.0, 60.0, 60.0]
    (f,) = [f for f in s.findings if f.kind == "input_bound"]
    assert f.evidence["input_span"] == name and f.share_of_step == pytest.approx(0.6)
    assert "gpu_during_the_wait" not in f.evidence and "GPU" not in f.title

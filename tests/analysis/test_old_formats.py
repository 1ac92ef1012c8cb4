"""Traces in torch 1.8-1.9's format give the figures the same run gives in today's format.

The old-format fixtures are the real job128 rank-0 trace with its categories renamed as torch
1.8/1.9 wrote them (tests/fixtures/old_format.py says exactly how).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import FIXTURES, J128
from tests.fixtures.old_format import load, save, to_old_format, with_data_loading

OLD = Path(__file__).parents[1] / "fixtures" / "old_format"


@functools.cache
def figures(path: Path) -> dict:
    s = summarize([path], top=None)
    (t,) = s.traces
    return {
        "steps": t.steps,
        "per_step": t.per_step,
        "gpu": t.gpu,
        "top_cpu_ops": t.top_cpu_ops,
        "findings": [(f.kind, f.title, f.time_us_per_step) for f in s.findings],
    }


@pytest.mark.parametrize("version", ["18", "19"])
def test_an_old_format_trace_gives_todays_figures(version):
    old, today = figures(OLD / f"job128_torch{version}_rank0.json.gz"), figures(J128[0])
    assert old["steps"].captured == [551, 552]  # ProfilerStep#N is an Operator there
    for key in ("steps", "per_step", "gpu", "findings"):
        assert old[key] == today[key], key
    # Their user record_function spans are Operators (torch-tb-profiler shows them so too): the
    # operator table has them beside today's operators, and an operator they are nested in loses
    # their time from its self time (All2All_Pooled_WaitBackward: 10025 us against 10198 us).
    names = {r.name for r in old["top_cpu_ops"]}
    assert {r.name for r in today["top_cpu_ops"]} <= names
    assert {"## forward ##", "## backward ##", "DistributedDataParallel.forward"} <= names


def test_an_input_bound_run_reads_the_same_in_both_formats(tmp_path):
    """The DataLoader span is a user_annotation today and an Operator in torch 1.9: one reading."""
    today = load(FIXTURES / "job2_rank0.json.gz")
    made = {
        "today": save(with_data_loading(today, 1 / 3), tmp_path / "today" / "rank0.json.gz"),
        "1.9": save(with_data_loading(to_old_format(today), 1 / 3), tmp_path / "old" / "rank0.json.gz"),
    }
    s = {k: summarize([p], top=None) for k, p in made.items()}
    assert s["1.9"].traces[0].per_step == s["today"].traces[0].per_step
    found = {k: [(f.kind, f.time_us_per_step) for f in v.findings] for k, v in s.items()}
    assert found["1.9"] == found["today"] and found["today"][0][0] == "input_bound"

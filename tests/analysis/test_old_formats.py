"""Traces in torch 1.8-1.9's format give the figures the same run gives in today's format.

The old-format fixtures are the real job128 rank-0 trace with its categories renamed as torch
1.8/1.9 wrote them (tests/fixtures/old_format.py says exactly how).
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from bridge_plugins.analysis.summarize import summarize
from tests.analysis.test_fixtures import J128

OLD = Path(__file__).parents[1] / "fixtures" / "old_format"


@functools.cache
def figures(path: Path) -> dict:
    s = summarize([path], top=None)
    (t,) = s["traces"]
    return {
        "steps": t["steps"],
        "per_step": t["per_step"],
        "gpu": t["gpu"],
        "top_cpu_ops": t["top_cpu_ops"],
        "findings": [(f.kind, f.title, f.time_us_per_step) for f in s["findings"]],
    }


@pytest.mark.parametrize("version", ["18", "19"])
def test_an_old_format_trace_gives_todays_figures(version):
    old, today = figures(OLD / f"job128_torch{version}_rank0.json.gz"), figures(J128[0])
    assert old["steps"]["captured"] == [551, 552]  # ProfilerStep#N is an Operator there
    for key in ("steps", "per_step", "gpu", "findings"):
        assert old[key] == today[key], key
    # Their user record_function spans are Operators (torch-tb-profiler shows them so too): the
    # operator table has them beside today's operators, and an operator they are nested in loses
    # their time from its self time (All2All_Pooled_WaitBackward: 10025 us against 10198 us).
    names = {r["name"] for r in old["top_cpu_ops"]}
    assert {r["name"] for r in today["top_cpu_ops"]} <= names
    assert {"## forward ##", "## backward ##", "DistributedDataParallel.forward"} <= names

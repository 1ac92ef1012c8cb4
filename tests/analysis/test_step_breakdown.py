"""The per-step breakdown on every trace at hand: its parts sum to the step, and the report and the
terminal draw exactly those figures (torch-tb-profiler's own figures: test_step_breakdown_tb.py)."""

from __future__ import annotations

import re

import pytest

from bridge_plugins.analysis.analyzers.step_breakdown import ROLES, parts_of
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.report.html import render
from bridge_plugins.analysis.text.summary import breakdown_line
from tests.analysis.gpu_traces import FIXTURES

PUBLIC = sorted((FIXTURES.parent / "public-traces").glob("*.json.gz"))
CPU_ONLY = next(p for p in PUBLIC if p.name.startswith("cpu_only__"))


@pytest.mark.parametrize("path", [*sorted(FIXTURES.glob("*.json.gz")), *PUBLIC], ids=lambda p: p.name[:40])
def test_the_parts_of_each_step_sum_to_it(path):
    for t in summarize([path], top=1).traces:
        for step in t.per_step:
            b = parts_of(step.breakdown)
            assert sum(b[f"{r}_us"] for r in (*ROLES, "other")) == pytest.approx(b["step_us"], rel=1e-9, abs=1e-3)
            assert (
                b["step_us"] > 0
            )  # may be shorter than time_us: a step starts where the previous one's GPU work ended
            assert min(b.values()) >= 0


def test_the_report_draws_a_stacked_bar_per_step_with_the_summarys_figures():
    s = summarize([FIXTURES / "job2_rank0.json.gz", CPU_ONLY], top=5)
    html = render(s)
    for t in s.traces:
        chart = re.search(rf'<figure class="chart" id="chart-step-breakdown-{t.rank}".*?</figure>', html).group(0)
        for step in t.per_step:
            bar = re.search(rf'<g class="bar"[^>]* data-step="{step.step}".*?</g>', chart).group(0)
            drawn = {k: float(v) for k, v in re.findall(r'data-key="(\w+)" data-value="([-\d.e+]+)"', bar)}
            expected = {k: v for k, v in parts_of(step.breakdown).items() if k in drawn}
            assert drawn == pytest.approx(expected) and len(drawn) == (8 if t.gpu else 4)
        if t.gpu is None:  # a CPU-only trace: no GPU parts anywhere, in the chart or in the terminal
            assert "kernel" not in chart and "runtime" not in chart
            assert "kernel" not in breakdown_line(t) and "communication 85.1 %" in breakdown_line(t)

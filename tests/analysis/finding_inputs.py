"""The inputs of the finding-rule tests (test_finding_thresholds.py, test_finding_edges.py): job128's
real summary of rank 0 with one step of MEDIAN_US and only the analyses a case sets replaced."""

from __future__ import annotations

import copy
import dataclasses
import functools

from bridge_plugins.analysis.figures import StepBreakdown, StepRow
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import J128

MEDIAN_US = 1000.0  # every case's median step; one step captured, so a total is a per-step figure


@functools.cache
def real_trace() -> dict:
    return summarize(J128[:1], top=None).traces[0]


def step_row(step: int, input_wait_us: float = 0.0, input_span: str | None = None, **breakdown: float) -> StepRow:
    """A ``per_step`` row with the given input wait, span and breakdown parts (the others 0; no
    breakdown when none is given)."""
    parts = dict.fromkeys(f.name for f in dataclasses.fields(StepBreakdown))
    b = StepBreakdown(**{k: breakdown.get(k, 0.0) for k in parts}) if breakdown else None
    return StepRow(
        step=step,
        time_us=MEDIAN_US,
        gpu_idle_share=None,
        breakdown=b,
        input_wait_us=input_wait_us,
        input_span=input_span,
    )


def trace(**analyses) -> dict:  # type: ignore[no-untyped-def]
    """The real trace with one step of MEDIAN_US and the given analyses replaced."""
    t = copy.deepcopy(real_trace())
    t.steps = dataclasses.replace(t.steps, count=1, median_us=MEDIAN_US)
    t.analyses = dataclasses.replace(t.analyses, **analyses)
    return t

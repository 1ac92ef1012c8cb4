"""Per captured step: its time and how idle the GPU was for it, the cells of the many-ranks heatmaps.

A step's GPU work is the kept GPU events (gpu_breakdown) launched from inside its ``ProfilerStep``
span; its GPU idle share is the part of that work's window with none of them running (HTA's idle
time, per step), None where it launched nothing. ``breakdown`` and ``input_wait_us`` come from
step_breakdown (docs/analysis-schema.md, "Step breakdown")."""

from __future__ import annotations

import numpy as np

from bridge_plugins.analysis.analyzers.gpu_breakdown import _union_length
from bridge_plugins.analysis.analyzers.step_breakdown import GpuRoles, step_splits
from bridge_plugins.analysis.figures import StepRow
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import NEARLY_SORTED, CpuCalls, GpuEvents


def per_step(d: Collected, g: GpuEvents, calls: CpuCalls, gpu_roles: GpuRoles) -> list[StepRow]:
    """A row per captured step, in step order."""
    splits = step_splits(d, g, calls, gpu_roles)  # first: the columns below are not held while it runs
    steps = sorted(d.steps)
    idle: dict[int, float | None] = dict.fromkeys(steps)
    if steps and len(g.ts):
        launched = np.where(g.launch >= 0, calls.ts[np.maximum(g.launch, 0)] if len(calls.ts) else 0.0, np.nan)
        by_launch = np.argsort(launched, kind="stable").astype(np.int32 if len(launched) < 2**31 else np.int64)
        launched.sort(kind="stable")  # NaN (no launch call) last: in no step; a search per step below
        for n in steps:
            start = d.step_ts[n]
            a, b = np.searchsorted(launched, [start, start + d.steps[n]])  # launched in [start, end)
            if a >= b:
                continue
            mine = np.sort(by_launch[a:b], kind=NEARLY_SORTED)  # in the events' order, as a mask over them gives them
            s = g.ts[mine]
            e = s + g.dur[mine]  # GpuEvents.end's ts + dur, for these events only
            base = s.min()
            window = float(e.max() - base)
            if window > 0:
                idle[n] = 1.0 - _union_length(s - base, e - base) / window
    return [
        StepRow(
            step=n,
            time_us=d.steps[n],
            gpu_idle_share=idle[n],
            breakdown=splits[n].breakdown,
            input_wait_us=splits[n].input_wait_us,
            input_span=splits[n].input_span,
        )
        for n in steps
    ]

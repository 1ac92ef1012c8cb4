"""Per captured step: its time and how idle the GPU was for it, the cells of the many-ranks heatmaps.

A step's GPU work is what its CPU side launched: the kept GPU events (see gpu_breakdown) whose
``correlation`` matches a launch that starts inside the step's ``ProfilerStep`` span. The step's
**GPU idle share** is the part of its GPU window (from the first of those events' start to the last
one's end) in which none of them runs, on any stream: HTA's idle time, per step. None for a step
that launched nothing on the GPU (and for every step of a CPU-only trace).
"""

from __future__ import annotations

from array import array

import numpy as np
from numpy.typing import DTypeLike

from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_breakdown import _union_length


def _array(a: array, dtype: DTypeLike) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype)


def per_step(d: Collected, keep: np.ndarray) -> list[dict]:
    """``[{"step": N, "time_us": float, "gpu_idle_share": float | None}]`` in step order."""
    steps = sorted(d.steps)
    idle: dict[int, float | None] = dict.fromkeys(steps)
    corr = _array(d.gpu_corr, np.int64)[keep] if len(keep) else np.zeros(0, np.int64)
    if steps and len(corr):
        cpu_corr, cpu_ts = d.cpu_correlations()
        order = np.argsort(cpu_corr, kind="stable")
        cpu_corr, cpu_ts = cpu_corr[order], cpu_ts[order]
        at = np.clip(np.searchsorted(cpu_corr, corr), 0, max(len(cpu_corr) - 1, 0))
        found = cpu_corr[at] == corr if len(cpu_corr) else np.zeros(len(corr), bool)
        launched = np.where(found, cpu_ts[at] if len(cpu_ts) else 0.0, np.nan)
        ts = _array(d.gpu_ts, np.float64)[keep]
        end = ts + _array(d.gpu_dur, np.float64)[keep]
        for n in steps:
            start = d.step_ts[n]
            mine = (launched >= start) & (launched < start + d.steps[n])
            if not mine.any():
                continue
            s, e = ts[mine], end[mine]
            base = s.min()
            window = float(e.max() - base)
            if window > 0:
                idle[n] = 1.0 - _union_length(s - base, e - base) / window
    return [{"step": n, "time_us": d.steps[n], "gpu_idle_share": idle[n]} for n in steps]

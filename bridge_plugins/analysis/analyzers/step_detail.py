"""What each captured step was made of, so a slow step can be compared with a typical one.

Per ProfilerStep: its duration; ``outside_ops_us``, the part of the step on the training thread
(the one with most operators) when no operator runs (Python between ops, waiting on a data
loader, sleeping); the CPU launch calls it made and the GPU time of what they launched; and the
synchronizations inside it (from syncs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.threads import covered
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import LAUNCH_CALLS, CpuCalls, GpuEvents


@dataclass
class StepDetail:
    step: int
    start_us: float
    duration_us: float
    outside_ops_us: float | None  # None: no operators recorded on any thread
    launches: int
    gpu_us: float  # summed durations of the GPU work launched inside the step
    syncs: int


class _Coverage:
    """Time covered by a set of intervals inside any window, in O(log n) per window."""

    def __init__(self, union: tuple[np.ndarray, np.ndarray]):
        self.s, self.e = union
        self.before = np.concatenate([[0.0], np.cumsum(self.e - self.s)])  # covered time before interval i

    def _upto(self, t: float) -> float:
        i = int(np.searchsorted(self.s, t, side="right"))  # intervals starting at or before t
        if i == 0:
            return 0.0
        return float(self.before[i - 1] + min(self.e[i - 1], t) - self.s[i - 1])

    def within(self, lo: float, hi: float) -> float:
        return self._upto(hi) - self._upto(lo)


def _launches(d: Collected, steps: dict[int, tuple[float, float]]) -> dict[int, int]:
    """Per step, the CPU launch calls that start inside it, counted a block of calls at a time."""
    launch_ids = [i for i, n in enumerate(d.names) if n in LAUNCH_CALLS]
    counts = dict.fromkeys(steps, 0)
    if not launch_ids or not steps:
        return counts
    bounds = np.array([(start, start + dur) for start, dur in steps.values()], dtype=np.float64)
    for ts, name in d.cpu_call_blocks((1, 3)):
        t = np.sort(ts[np.isin(name, launch_ids)])
        inside = np.searchsorted(t, bounds[:, 1]) - np.searchsorted(t, bounds[:, 0])
        for n, k in zip(counts, inside.tolist(), strict=True):
            counts[n] += k
    return counts


def step_details(
    d: Collected, calls: CpuCalls, g: GpuEvents | None, steps: dict[int, tuple[float, float]], syncs: dict[int, int]
) -> list[StepDetail]:
    main = max(d.ops, key=d.ops.length, default=None)
    coverage = _Coverage(covered(d.ops, main)) if main is not None else None
    launches = _launches(d, steps)
    has = g.launch >= 0 if g is not None else np.zeros(0, dtype=bool)
    g_launch_ts = calls.ts[g.launch[has]] if g is not None else np.zeros(0)
    order = np.argsort(g_launch_ts, kind="stable")
    g_launch_ts = g_launch_ts[order]
    gpu_before = np.concatenate([[0.0], np.cumsum(g.dur[has][order] if g is not None else np.zeros(0))])
    out = []
    for n, (start, dur) in steps.items():
        end = start + dur
        a, b = np.searchsorted(g_launch_ts, [start, end])
        out.append(
            StepDetail(
                step=n,
                start_us=start,
                duration_us=dur,
                outside_ops_us=dur - coverage.within(start, end) if coverage is not None else None,
                launches=launches[n],
                gpu_us=float(gpu_before[b] - gpu_before[a]),
                syncs=syncs.get(n, 0),
            )
        )
    return out

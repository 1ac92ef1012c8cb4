"""What each captured step was made of, so a slow step can be compared with a typical one.

Per ProfilerStep: its duration; ``outside_ops_us``, the part of the step on the training thread
(the one with most operators) when no operator runs (Python between ops, waiting on a data
loader, sleeping); the CPU launch calls it made and the GPU time of what they launched; and the
synchronizations inside it (from syncs).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.threads import columns
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import LAUNCH_CALLS, CpuCalls, GpuEvents, union


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

    def __init__(self, starts: np.ndarray, ends: np.ndarray):
        self.s, self.e = union(starts, ends)
        self.before = np.concatenate([[0.0], np.cumsum(self.e - self.s)])  # covered time before interval i

    def _upto(self, t: float) -> float:
        i = int(np.searchsorted(self.s, t, side="right"))  # intervals starting at or before t
        if i == 0:
            return 0.0
        return float(self.before[i - 1] + min(self.e[i - 1], t) - self.s[i - 1])

    def within(self, lo: float, hi: float) -> float:
        return self._upto(hi) - self._upto(lo)


def _count(sorted_times: np.ndarray, lo: float, hi: float) -> int:
    return int(np.searchsorted(sorted_times, hi) - np.searchsorted(sorted_times, lo))


def step_details(
    d: Collected, calls: CpuCalls, g: GpuEvents | None, steps: dict[int, tuple[float, float]], syncs: dict[int, int]
) -> list[StepDetail]:
    main = max(d.ops, key=d.ops.length, default=None)
    covered = _Coverage(*columns(d.ops[main])[:2]) if main is not None else None
    launch_ids = [i for i, n in enumerate(d.names) if n in LAUNCH_CALLS]
    is_launch = np.isin(calls.name, launch_ids) if launch_ids else np.zeros(len(calls.name), dtype=bool)
    launch_ts = np.sort(calls.ts[is_launch])
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
                outside_ops_us=dur - covered.within(start, end) if covered is not None else None,
                launches=_count(launch_ts, start, end),
                gpu_us=float(gpu_before[b] - gpu_before[a]),
                syncs=syncs.get(n, 0),
            )
        )
    return out

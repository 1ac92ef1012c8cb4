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
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, LAUNCH_CALLS, NEARLY_SORTED, CpuCalls, GpuEvents


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
        t = np.sort(ts[np.isin(name, launch_ids)], kind=NEARLY_SORTED)
        inside = np.searchsorted(t, bounds[:, 1]) - np.searchsorted(t, bounds[:, 0])
        for n, k in zip(counts, inside.tolist(), strict=True):
            counts[n] += k
    return counts


def _gpu_launched_within(
    g: GpuEvents | None, calls: CpuCalls, windows: list[tuple[float, float]], events_at: int = EVENTS_AT
) -> list[float]:
    """Per window (start, duration): the summed durations of the GPU events whose launch call starts
    in it, as a difference of the running sums over the events in launch order. Only the sums at
    the windows' bounds are kept: the running sum goes ``events_at`` events at a time, each block's
    ``np.cumsum`` led by the sum so far, so every sum is the one a single ``np.cumsum`` gives (issue
    32: the launch order's columns whole took 80 MB more on a 3 GB trace)."""
    if g is None:
        return [0.0] * len(windows)
    at = np.flatnonzero(g.launch >= 0).astype(np.int32 if len(g.launch) < 2**31 else np.int64)
    launch_ts = calls.ts[g.launch[at]]
    order = np.argsort(launch_ts, kind="stable")
    launch_ts.sort(kind="stable")  # in place: launch_ts[order] without its copy
    bounds = np.array([[start, start + dur] for start, dur in windows], dtype=np.float64).reshape(-1, 2)
    where = np.searchsorted(launch_ts, bounds)  # how many events were launched before each bound
    del launch_ts
    at = at[order]  # the events in launch order
    del order
    wanted = np.unique(where)
    sums = np.zeros(len(wanted))  # the sum of the first ``wanted`` durations in launch order
    running: float | None = None  # the sum of the durations before this block (None: the first block)
    for a in range(0, len(at), events_at):
        durs = g.dur[at[a : a + events_at]]
        if running is None:  # np.cumsum's first sum is its first term
            part = np.concatenate([[0.0], np.cumsum(durs)])
        else:  # the sums go on from the last one, added in the same order
            part = np.cumsum(np.concatenate([[running], durs]))
        inside = (wanted >= a) & (wanted <= a + len(durs))
        sums[inside] = part[wanted[inside] - a]  # part[i]: the sum of the first a + i
        running = float(part[-1])
    before = dict(zip(wanted.tolist(), sums.tolist(), strict=True))
    return [before[hi] - before[lo] for lo, hi in where.tolist()]


def step_details(
    d: Collected, calls: CpuCalls, g: GpuEvents | None, steps: dict[int, tuple[float, float]], syncs: dict[int, int]
) -> list[StepDetail]:
    main = max(d.ops, key=d.ops.length, default=None)
    coverage = _Coverage(covered(d.ops, main)) if main is not None else None
    launches = _launches(d, steps)
    gpu_us = _gpu_launched_within(g, calls, list(steps.values()))
    out = []
    for (n, (start, dur)), gpu in zip(steps.items(), gpu_us, strict=True):
        end = start + dur
        out.append(
            StepDetail(
                step=n,
                start_us=start,
                duration_us=dur,
                outside_ops_us=dur - coverage.within(start, end) if coverage is not None else None,
                launches=launches[n],
                gpu_us=gpu,
                syncs=syncs.get(n, 0),
            )
        )
    return out

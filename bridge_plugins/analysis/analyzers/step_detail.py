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
from bridge_plugins.analysis.trace.gpu_events import LAUNCH_CALLS, CpuCalls, GpuEvents, length, union


@dataclass
class StepDetail:
    step: int
    start_us: float
    duration_us: float
    outside_ops_us: float | None  # None: no operators recorded on any thread
    launches: int
    gpu_us: float  # summed durations of the GPU work launched inside the step
    syncs: int


def _covered(starts: np.ndarray, ends: np.ndarray, lo: float, hi: float) -> float:
    s, e = np.clip(starts, lo, hi), np.clip(ends, lo, hi)
    keep = e > s
    return length(*union(s[keep], e[keep]))


def step_details(
    d: Collected, calls: CpuCalls, g: GpuEvents | None, steps: dict[int, tuple[float, float]], syncs: dict[int, int]
) -> list[StepDetail]:
    main = max(d.ops, key=lambda k: len(d.ops[k][0]), default=None)
    starts, ends, _ = columns(d.ops[main]) if main is not None else (np.zeros(0), np.zeros(0), None)
    launch_ids = [i for i, n in enumerate(d.names) if n in LAUNCH_CALLS]
    is_launch = np.isin(calls.name, launch_ids) if launch_ids else np.zeros(len(calls.name), dtype=bool)
    launch_ts = calls.ts[is_launch]
    g_launch_ts = calls.ts[g.launch[g.launch >= 0]] if g is not None else np.zeros(0)
    g_dur = g.dur[g.launch >= 0] if g is not None else np.zeros(0)
    out = []
    for n, (start, dur) in steps.items():
        end = start + dur
        in_step = (g_launch_ts >= start) & (g_launch_ts < end)
        out.append(
            StepDetail(
                step=n,
                start_us=start,
                duration_us=dur,
                outside_ops_us=dur - _covered(starts, ends, start, end) if main is not None else None,
                launches=int(((launch_ts >= start) & (launch_ts < end)).sum()),
                gpu_us=float(g_dur[in_step].sum()),
                syncs=syncs.get(n, 0),
            )
        )
    return out

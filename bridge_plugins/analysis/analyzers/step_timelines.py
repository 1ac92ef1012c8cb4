"""The events of two steps per rank, for the report's timeline: the median step and the slowest.

Taken from the collector's arrays after the one pass (no second read). A step's window runs from
its ProfilerStep start to the later of its end and the end of the last GPU event it launched (GPU
work runs after the CPU queued it). Lanes: each CPU thread's operators (nesting depth up to
``MAX_DEPTH``) and each GPU stream's kernels, memcpys and memsets. A lane keeps its ``MAX_BARS``
longest bars, so a report stays small whatever the trace holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.step_detail import StepDetail
from bridge_plugins.analysis.analyzers.threads import overlapping
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import CpuCalls, GpuEvents

MAX_DEPTH = 2
MAX_BARS = 400


@dataclass
class Bar:
    start_us: float  # from the window's start
    duration_us: float
    name: str
    category: str  # cpu_op, or the GPU kind: computation / communication / memory / other
    depth: int = 0


@dataclass
class Lane:
    label: str  # "CPU thread <tid>" or "GPU stream <n>"
    kind: str  # cpu | gpu
    bars: list[Bar]
    dropped: int = 0  # bars left out (shortest first) to stay under MAX_BARS


@dataclass
class StepTimeline:
    which: str  # median | slowest
    step: int
    start_us: float  # absolute trace time of the window start
    duration_us: float  # the window, GPU tail included
    step_us: float  # the ProfilerStep span alone
    lanes: list[Lane]


def _depths(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    depth = np.zeros(len(starts), dtype=np.int64)
    stack: list[float] = []
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        while stack and s >= stack[-1]:
            stack.pop()
        depth[i] = len(stack)
        stack.append(e)
    return depth


def _cap(bars: list[Bar]) -> tuple[list[Bar], int]:
    if len(bars) <= MAX_BARS:
        return bars, 0
    kept = sorted(sorted(bars, key=lambda b: -b.duration_us)[:MAX_BARS], key=lambda b: b.start_us)
    return kept, len(bars) - MAX_BARS


def _cpu_lanes(d: Collected, lo: float, hi: float) -> list[Lane]:
    lanes = []
    for key in sorted(d.ops, key=lambda k: -d.ops.length(k)):
        starts, ends, names = overlapping(d.ops, key, lo, hi)  # with those enclosing them: depths hold
        if not len(starts):
            continue
        depth = _depths(starts, ends)
        m = depth <= MAX_DEPTH
        bars = [
            Bar(max(s, lo) - lo, min(e, hi) - max(s, lo), d.names[n], "cpu_op", int(k))
            for s, e, n, k in zip(
                starts[m].tolist(), ends[m].tolist(), names[m].tolist(), depth[m].tolist(), strict=True
            )
        ]
        bars, dropped = _cap(bars)
        lanes.append(Lane(f"CPU thread {key[1]}", "cpu", bars, dropped))
    return lanes


def _gpu_lanes(d: Collected, g: GpuEvents, lo: float, hi: float) -> list[Lane]:
    lanes = []
    end = g.end
    m = (end > lo) & (g.ts < hi)
    for code in np.unique(g.stream[m]).tolist():
        sm = m & (g.stream == code)
        bars = [
            Bar(max(s, lo) - lo, min(e, hi) - max(s, lo), d.names[n], k)
            for s, e, n, k in zip(
                g.ts[sm].tolist(), end[sm].tolist(), g.name[sm].tolist(), g.kind_names(g.kind[sm]), strict=True
            )
        ]
        bars, dropped = _cap(bars)
        lanes.append(Lane(f"GPU stream {int(g.streams[code])}", "gpu", bars, dropped))
    return lanes


def _window(step: StepDetail, g: GpuEvents | None, calls: CpuCalls) -> tuple[float, float]:
    lo, hi = step.start_us, step.start_us + step.duration_us
    if g is not None and len(g.ts):
        has = g.launch >= 0
        launched = np.zeros(len(g.ts), dtype=bool)
        launch_ts = calls.ts[g.launch[has]]
        launched[has] = (launch_ts >= lo) & (launch_ts < hi)
        if launched.any():
            hi = max(hi, float((g.ts[launched] + g.dur[launched]).max()))
    return lo, hi


def step_timelines(d: Collected, g: GpuEvents | None, calls: CpuCalls, steps: list[StepDetail]) -> list[StepTimeline]:
    """The median step's timeline and, when another step, the slowest's."""
    if not steps:
        return []
    durations = sorted(s.duration_us for s in steps)
    median = durations[(len(durations) - 1) // 2]
    picks = [("median", min(steps, key=lambda s: (abs(s.duration_us - median), s.step)))]
    slowest = max(steps, key=lambda s: (s.duration_us, -s.step))
    if slowest.step != picks[0][1].step:
        picks.append(("slowest", slowest))
    out = []
    for which, step in picks:
        lo, hi = _window(step, g, calls)
        lanes = _cpu_lanes(d, lo, hi) + (_gpu_lanes(d, g, lo, hi) if g is not None else [])
        out.append(StepTimeline(which, step.step, lo, hi - lo, step.duration_us, lanes))
    return out

"""Every analyzer over one trace, from the collector's single pass: one typed result.

``TraceAnalyses`` is what ``summary --json`` carries per trace under ``"analyses"`` (see
docs/analysis-schema.md), what the terminal and the report render and what the findings read.
A figure that cannot be computed is None or empty, and its ``note`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from bridge_plugins.analysis.analyzers.attribution import Attribution, attribution
from bridge_plugins.analysis.analyzers.bandwidth import MemoryBandwidth, memory_bandwidth
from bridge_plugins.analysis.analyzers.idle import IdleBreakdown, idle_breakdown
from bridge_plugins.analysis.analyzers.kernel_breakdown import KernelBreakdown, kernel_breakdown
from bridge_plugins.analysis.analyzers.launches import LaunchStats, launch_stats
from bridge_plugins.analysis.analyzers.overlap import Overlap, overlap
from bridge_plugins.analysis.analyzers.queue import QueueLength, queue_length
from bridge_plugins.analysis.analyzers.step_detail import StepDetail, step_details
from bridge_plugins.analysis.analyzers.step_timelines import StepTimeline, step_timelines
from bridge_plugins.analysis.analyzers.syncs import SyncPoints, sync_points
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import CpuCalls, GpuEvents

NO_GPU = "no GPU events in this trace (CPU-only run)"
NONE_KEPT = (
    "{n} GPU events, none launched by a CPU call of the captured steps (the trace has {calls} CPU launch "
    "calls to match them with): no GPU figures, as HTA would keep none"
)


@dataclass
class TraceAnalyses:
    overlap: Overlap | None
    idle: IdleBreakdown | None
    launches: LaunchStats | None
    queue: QueueLength | None
    bandwidth: MemoryBandwidth | None
    kernels: KernelBreakdown | None
    attribution: Attribution | None
    syncs: SyncPoints
    steps: list[StepDetail]
    timelines: list[StepTimeline]  # the median and the slowest step, for the report
    note: str | None = None  # why the GPU analyses are None

    def cut(self, top: int | None) -> TraceAnalyses:
        """A copy with the per-kernel and per-owner lists cut to ``top`` rows (None: all)."""
        if top is None or self.kernels is None or self.attribution is None:
            return self
        a = self.attribution
        return replace(
            self,
            kernels=replace(self.kernels, kernels=self.kernels.kernels[:top]),
            attribution=replace(a, top_level_ops=a.top_level_ops[:top], modules=a.modules[:top]),
        )


def step_intervals(d: Collected) -> dict[int, tuple[float, float]]:
    """ProfilerStep number -> (start, duration) in us."""
    return {n: (d.step_ts[n], d.steps[n]) for n in sorted(d.steps) if n in d.step_ts}


def analyze(d: Collected, g: GpuEvents, calls: CpuCalls, timelines: bool = True) -> TraceAnalyses:
    """All analyses of one trace (every kernel and owner: see ``TraceAnalyses.cut``), from its kept
    GPU events and their launch calls (gpu_events.joined). ``timelines`` False: none drawn (only the
    report and ``summary --json --timelines`` show them)."""
    with np.errstate(all="ignore"):  # a hostile duration (1e300) overflows a square: inf, not a warning
        return _analyze(d, g, calls, timelines)


def _analyze(d: Collected, g: GpuEvents, calls: CpuCalls, timelines: bool) -> TraceAnalyses:
    intervals = step_intervals(d)
    syncs = sync_points(d, intervals)
    if len(g.ts) == 0:
        steps = step_details(d, calls, None, intervals, syncs.per_step)
        note = NONE_KEPT.format(n=d.gpu_count, calls=calls.count) if d.gpu_count else NO_GPU
        return TraceAnalyses(
            overlap=None,
            idle=None,
            launches=None,
            queue=None,
            bandwidth=None,
            kernels=None,
            attribution=None,
            syncs=syncs,
            steps=steps,
            timelines=step_timelines(d, None, calls, steps) if timelines else [],
            note=note,
        )
    steps = step_details(d, calls, g, intervals, syncs.per_step)
    return TraceAnalyses(
        overlap=overlap(g),
        idle=idle_breakdown(g, calls),
        launches=launch_stats(g, calls, d.names),
        queue=queue_length(g, calls, d.names),
        bandwidth=memory_bandwidth(d, g),
        kernels=kernel_breakdown(g, d.names),
        attribution=attribution(d, g, calls),
        syncs=syncs,
        steps=steps,
        timelines=step_timelines(d, g, calls, steps) if timelines else [],
    )

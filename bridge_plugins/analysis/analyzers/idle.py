"""Why each GPU stream sits idle: waiting on the host, on kernel launch gaps, or other (HTA's
``get_idle_time_breakdown``).

Per stream, over its kernels, memcpys and memsets in start order, each gap before an event is:
- ``host_wait`` when the CPU call that launched the event started after the previous event ended
  (the host had not enqueued it yet);
- ``kernel_wait`` otherwise, when the gap is under ``KERNEL_WAIT_US`` (back-to-back launch cost);
- ``other`` otherwise (e.g. waiting on an event from another stream).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.trace.collect import GPU_OTHER
from bridge_plugins.analysis.trace.gpu_events import CpuCalls, GpuEvents
from bridge_plugins.analysis.trace.kernel_types import COMPUTATION

KERNEL_WAIT_US = 30.0  # HTA's consecutive_kernel_delay
CATEGORIES = ("host_wait", "kernel_wait", "other")


@dataclass
class StreamIdle:
    stream: int
    busy_us: float  # summed durations of its events
    computation_us: float  # of which computation kernels: the stream the model runs on has most
    idle_us: float
    host_wait_us: float
    kernel_wait_us: float
    other_us: float
    host_wait_pct: float | None
    kernel_wait_pct: float | None
    other_pct: float | None


@dataclass
class IdleBreakdown:
    streams: list[StreamIdle]
    note: str | None = None


def _stream(stream: int, ts: np.ndarray, end: np.ndarray, launch_ts: np.ndarray, computation: np.ndarray) -> StreamIdle:
    length = end - ts
    busy, comp = float(length.sum()), float(length[computation].sum())
    del length
    prev_end = end[:-1]
    host = launch_ts[1:] > prev_end  # NaN (no launch found) compares False, as in HTA
    del launch_ts
    gap = np.subtract(ts[1:], prev_end, out=ts[1:])  # in place: ts, end and launch_ts are this call's own
    del prev_end, end
    kernel = ~host & (gap < KERNEL_WAIT_US)
    parts = [float(gap[host].sum()), float(gap[kernel].sum()), float(gap[~host & ~kernel].sum())]
    total = sum(parts)
    pct = [100.0 * p / total if total else None for p in parts]
    return StreamIdle(stream, busy, comp, total, *parts, *pct)


def _launch_times(g: GpuEvents, calls: CpuCalls, m: np.ndarray) -> np.ndarray:
    """When the CPU call that launched each event of ``m`` started (NaN: no launch call found)."""
    launch = g.launch[m]
    launch_ts = np.full(len(launch), np.nan)
    has = launch >= 0
    launch_ts[has] = calls.ts[launch[has]]
    return launch_ts


def idle_breakdown(g: GpuEvents, calls: CpuCalls) -> IdleBreakdown:
    real = g.cat != GPU_OTHER  # kernels, memcpys and memsets; not sync markers
    if not real.any():
        return IdleBreakdown([], "no kernels, memcpys or memsets on any stream")
    out = []
    computation = g.of_kind(COMPUTATION)
    for code in np.unique(g.stream[real]).tolist():
        m = real & (g.stream == code)  # g is sorted by start already
        out.append(_stream(int(g.streams[code]), *g.spans(m), _launch_times(g, calls, m), computation[m]))
    note = (
        None if (g.launch[real] >= 0).any() else "no CPU launch calls matched: every gap counts as kernel or other wait"
    )
    return IdleBreakdown(sorted(out, key=lambda r: -r.idle_us), note)

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
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, CpuCalls, GpuEvents
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


def _stream(stream: int, g: GpuEvents, calls: CpuCalls, m: np.ndarray, computation: np.ndarray) -> StreamIdle:
    """The figures of ``stream``, whose events are ``m`` (``computation``: which of those are)."""
    ts, end = g.spans(m)
    host = _host_waits(g, calls, m, end)
    length = end - ts
    gap = np.subtract(ts[1:], end[:-1], out=ts[1:])  # in place: ts is this call's own
    del end
    busy, comp = float(length.sum()), float(length[computation].sum())
    del length
    kernel = ~host & (gap < KERNEL_WAIT_US)
    parts = [float(gap[host].sum()), float(gap[kernel].sum()), float(gap[~host & ~kernel].sum())]
    total = sum(parts)
    pct = [100.0 * p / total if total else None for p in parts]
    return StreamIdle(stream, busy, comp, total, *parts, *pct)


def _host_waits(
    g: GpuEvents, calls: CpuCalls, m: np.ndarray, end: np.ndarray, events_at: int = EVENTS_AT
) -> np.ndarray:
    """For each event of ``m`` but the first: whether the CPU call that launched it started after the
    previous event's end (``end``; no launch call found: False, as NaN compares in HTA). The launch
    times go ``events_at`` at a time, never all at once (issue 32)."""
    launch = g.launch[m][1:]
    host = np.empty(len(launch), dtype=bool)
    for a in range(0, len(launch), events_at):
        part = launch[a : a + events_at]
        launch_ts = np.full(len(part), np.nan)
        has = part >= 0
        launch_ts[has] = calls.ts[part[has]]
        np.greater(launch_ts, end[a : a + len(part)], out=host[a : a + len(part)])
    return host


def idle_breakdown(g: GpuEvents, calls: CpuCalls) -> IdleBreakdown:
    real = g.cat != GPU_OTHER  # kernels, memcpys and memsets; not sync markers
    if not real.any():
        return IdleBreakdown([], "no kernels, memcpys or memsets on any stream")
    out = []
    computation = g.of_kind(COMPUTATION)
    for code in np.unique(g.stream[real]).tolist():
        m = real & (g.stream == code)  # g is sorted by start already
        out.append(_stream(int(g.streams[code]), g, calls, m, computation[m]))
    note = (
        None if (g.launch[real] >= 0).any() else "no CPU launch calls matched: every gap counts as kernel or other wait"
    )
    return IdleBreakdown(sorted(out, key=lambda r: -r.idle_us), note)

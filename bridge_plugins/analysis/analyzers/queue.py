"""CUDA queue length per stream (HTA's ``get_queue_length_summary``).

The number of launched but not yet started operations on a stream: +1 when a CPU launch call
(``cudaLaunchKernel``, ``cudaMemcpyAsync``... see gpu_events.LAUNCH_CALLS) starts, -1 when its GPU
event starts. Summarized over the points where it changes, as HTA does (not weighted by time). A
long queue means the CPU runs far ahead of the GPU (GPU-bound); a queue near 0 with an idle GPU
means the GPU waits on the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.distribution import Distribution, describe
from bridge_plugins.analysis.trace.gpu_events import LAUNCH_CALLS, CpuCalls, GpuEvents


@dataclass
class StreamQueue:
    stream: int
    queue_length: Distribution


@dataclass
class QueueLength:
    streams: list[StreamQueue]
    note: str | None = None


def queue_length(g: GpuEvents, calls: CpuCalls, names: list[str]) -> QueueLength:
    ids = np.array([i for i, n in enumerate(names) if n in LAUNCH_CALLS], dtype=np.int64)
    has = g.launch >= 0
    m = np.zeros(len(g.ts), dtype=bool)
    if len(ids) and has.any():
        m[has] = np.isin(calls.name[g.launch[has]], ids)
    if not m.any():
        return QueueLength([], "no GPU event matched a CPU launch call: no queue to measure")
    out = []
    for code in np.unique(g.stream[m]).tolist():
        sm = m & (g.stream == code)
        n = int(sm.sum())
        t = np.concatenate([calls.ts[g.launch[sm]], g.ts[sm]])  # n launches, then their n starts
        is_start = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])
        order = np.lexsort((is_start, t))  # at one instant, the launch before the start
        del t, is_start
        level = np.where(order < n, 1.0, -1.0)  # +1 a launch, -1 a start, in time order
        del order
        out.append(StreamQueue(int(g.streams[code]), describe(np.cumsum(level, out=level))))
    return QueueLength(out)

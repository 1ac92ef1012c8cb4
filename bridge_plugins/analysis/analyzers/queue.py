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
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, LAUNCH_CALLS, CpuCalls, GpuEvents


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
        level = _stream_levels(g, calls, m & (g.stream == code))
        out.append(StreamQueue(int(g.streams[code]), describe(level)))
        del level
    return QueueLength(out)


def _stream_levels(g: GpuEvents, calls: CpuCalls, sm: np.ndarray) -> np.ndarray:
    """:func:`levels` of the events ``sm``, as float64 (``np.cumsum`` of +-1.0 gives those numbers)."""
    launch_ts, start_ts = calls.ts[g.launch[sm]], g.ts[sm]
    level = levels(launch_ts, start_ts)
    del launch_ts, start_ts
    return level.astype(np.float64)


def levels(launch_ts: np.ndarray, start_ts: np.ndarray, events_at: int = EVENTS_AT) -> np.ndarray:
    """The queue length after each change, in time order, a launch before a start at the same instant:
    the cumulative sum of +1 per launch and -1 per start sorted by (time, start). Each change's place
    in that order and the length after it are counted (``searchsorted``) ``events_at`` at a time: no
    sort of the 2n changes and its index (issue 32: 66 MB on a 3 GB trace). Sorts both arguments in
    place."""
    launch_ts.sort(kind="stable")
    if not bool(np.all(start_ts[1:] >= start_ts[:-1])):  # GpuEvents are sorted by start: NaN last
        start_ts.sort(kind="stable")
    n = len(launch_ts)
    level = np.empty(2 * n, dtype=np.int32 if n < 2**30 else np.int64)
    for a in range(0, n, events_at):
        rank = np.arange(a, min(a + events_at, n))
        starts_before = np.searchsorted(start_ts, launch_ts[rank], side="left")
        level[rank + starts_before] = rank + 1 - starts_before
        launches_by = np.searchsorted(launch_ts, start_ts[rank], side="right")
        level[rank + launches_by] = launches_by - (rank + 1)
    return level

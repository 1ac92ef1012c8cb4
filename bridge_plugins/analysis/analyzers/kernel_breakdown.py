"""GPU time by kernel type and by their overlaps, and per-kernel statistics (HTA's ``get_gpu_kernel_breakdown``).

``by_type``: each kind's kernels (computation, communication, memory) are merged across streams,
then the rank's time is split by which kinds run at once ("computation overlapping communication"
and so on, HTA's names in lower case); ``pct`` is the share of the sum. ``kernels``: per kernel
name, its kind, calls, total, mean, min, max and sample standard deviation (us).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.trace.gpu_events import GpuEvents, union
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION, MEMORY

OVERLAP_BITS = (COMPUTATION, COMMUNICATION, MEMORY)  # bit 1, 2, 4, as HTA orders them


@dataclass
class TypeTime:
    type: str
    us: float
    pct: float


@dataclass
class KernelStats:
    name: str
    type: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    std_us: float


@dataclass
class KernelBreakdown:
    by_type: list[TypeTime]
    kernels: list[KernelStats]  # by total_us, largest first


_CHUNK = 1 << 18  # bounds swept at a time


def _label(bits: int) -> str:
    return " overlapping ".join(k for i, k in enumerate(OVERLAP_BITS) if bits & (1 << i))


def by_type(g: GpuEvents) -> list[TypeTime]:
    bounds, deltas = [], []
    for i, kind in enumerate(OVERLAP_BITS):
        s, e = union(*g.spans(g.of_kind(kind)))
        bounds += [s, e]
        deltas += [np.full(len(s), 1 << i, dtype=np.int8), np.full(len(e), -(1 << i), dtype=np.int8)]
    t = np.concatenate(bounds) if bounds else np.zeros(0)
    if len(t) == 0:
        return []
    delta = np.concatenate(deltas)  # int8: a bit per kind (cumsum adds them as int64)
    del bounds, deltas  # one copy of the bounds at a time: a 1 GB trace has ~10^6 of them
    order = np.lexsort((delta, t))
    times = np.zeros(8)  # time per set of kinds running (bits): np.bincount's sums, a chunk at a time
    level = 0  # the bits running before the chunk
    for lo in range(0, len(order) - 1, _CHUNK):
        hi = min(lo + _CHUNK, len(order) - 1)
        levels = np.cumsum(delta[order[lo:hi]]) + level  # from bound i to bound i + 1
        np.add.at(times, levels, np.diff(t[order[lo : hi + 1]]))  # in order, as bincount adds
        level = int(levels[-1])
    total = float(times[1:].sum())
    rows = [TypeTime(_label(b), float(times[b]), 100.0 * float(times[b]) / total) for b in range(1, 8) if times[b] > 0]
    return sorted(rows, key=lambda r: -r.us)


def kernel_stats(g: GpuEvents, names: list[str]) -> list[KernelStats]:
    if len(g.name) == 0:
        return []
    ids = g.name
    n = len(names)
    calls = np.bincount(ids, minlength=n)
    total = np.bincount(ids, weights=g.dur, minlength=n)
    sq = np.bincount(ids, weights=g.dur * g.dur, minlength=n)
    mins, maxs = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(mins, ids, g.dur)
    np.maximum.at(maxs, ids, g.dur)
    distinct, last = np.unique(ids[::-1], return_index=True)  # each name's last event (all share its kind)
    kind_of = dict(zip(distinct.tolist(), g.kind_names(g.kind[len(ids) - 1 - last]), strict=True))
    rows = []
    for i in np.flatnonzero(calls).tolist():
        c, mean = int(calls[i]), float(total[i] / calls[i])
        var = (float(sq[i]) - c * mean * mean) / (c - 1) if c > 1 else 0.0
        rows.append(
            KernelStats(
                names[i], kind_of[i], c, float(total[i]), mean, float(mins[i]), float(maxs[i]), max(var, 0.0) ** 0.5
            )
        )
    return sorted(rows, key=lambda r: (-r.total_us, r.name))


def kernel_breakdown(g: GpuEvents, names: list[str]) -> KernelBreakdown:
    return KernelBreakdown(by_type(g), kernel_stats(g, names))

"""GPU time by kernel type and by their overlaps, and per-kernel statistics (HTA's ``get_gpu_kernel_breakdown``).

``by_type``: each kind's kernels (computation, communication, memory) are merged across streams,
then the rank's time is split by which kinds run at once ("computation overlapping communication"
and so on, HTA's names in lower case); ``pct`` is the share of the sum. ``kernels``: per kernel
name, its kind, calls, total, mean, min, max and sample standard deviation (us).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.trace.gpu_events import KERNEL_TYPES, GpuEvents, kind_union
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


def by_type(g: GpuEvents, window: int = _CHUNK) -> list[TypeTime]:
    """Time per set of kinds running. With every kind's union forward (no backward or NaN interval),
    the bounds are swept a time window at a time (about ``window`` starts of each kind): the same
    sequence as one sort of all (issue 32: those took 90 MB more on a 3 GB trace)."""
    unions = [kind_union(g, KERNEL_TYPES.index(kind)) for kind in OVERLAP_BITS]
    if not all(bool(np.all(e >= s)) for s, e in unions):
        return _rows(_sweep(_bounds(unions, -np.inf, np.inf), _Sweep()))
    cuts = np.unique(np.concatenate([np.zeros(0), *(s[window::window] for s, _ in unions)]))
    edges = [-np.inf, *cuts.tolist(), np.inf]
    sweep = _Sweep()
    for lo, hi in zip(edges[:-1], edges[1:], strict=True):
        _sweep(_bounds(unions, lo, hi), sweep)
    return _rows(sweep)


class _Sweep:
    """What the sweep carries from one window to the next: time per set of kinds (bits), and the
    last bound so far (its time, and the bits running after it)."""

    def __init__(self) -> None:
        self.times = np.zeros(8)
        self.last: tuple[float, int] | None = None


def _bounds(unions: list[tuple[np.ndarray, np.ndarray]], lo: float, hi: float) -> tuple[np.ndarray, np.ndarray]:
    """The bounds in [lo, hi) of every kind (a start adds its kind's bit, an end takes it off), in
    the order of one sort of all: by time, ends before starts (the kinds' intervals are disjoint)."""
    bounds, deltas = [], []
    for i, (s, e) in enumerate(unions):
        for x, d in ((s, 1 << i), (e, -(1 << i))):
            part = x[
                0 if lo == -np.inf else int(np.searchsorted(x, lo)) : len(x)
                if hi == np.inf
                else int(np.searchsorted(x, hi))
            ]
            bounds.append(part)
            deltas.append(np.full(len(part), d, dtype=np.int8))
    t = np.concatenate(bounds)
    delta = np.concatenate(deltas)  # int8: a bit per kind (cumsum adds them as int64)
    del bounds, deltas
    order = np.lexsort((delta, t))
    return t[order], delta[order]


def _sweep(bounds: tuple[np.ndarray, np.ndarray], sweep: _Sweep) -> _Sweep:
    """Adds the time from each bound to the next, in order, to the bits running then (np.add.at, in
    order, as bincount adds), the carried last bound first."""
    t, delta = bounds
    if not len(t):
        return sweep
    if sweep.last is not None:
        t = np.concatenate(([sweep.last[0]], t))
        delta = np.concatenate(([0], delta)).astype(np.int8)
    level = sweep.last[1] if sweep.last is not None else 0
    for lo in range(0, len(t) - 1, _CHUNK):
        hi = min(lo + _CHUNK, len(t) - 1)
        levels = np.cumsum(delta[lo:hi]) + level  # from bound i to bound i + 1
        np.add.at(sweep.times, levels, np.diff(t[lo : hi + 1]))
        level = int(levels[-1])
    sweep.last = (float(t[-1]), level + int(delta[-1]))  # the bits after the last bound
    return sweep


def _rows(sweep: _Sweep) -> list[TypeTime]:
    times = sweep.times
    if sweep.last is None:
        return []
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

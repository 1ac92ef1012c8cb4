"""How much of a rank's communication runs under computation (HTA's ``get_comm_comp_overlap``).

``overlap_pct`` = time when both a communication and a computation kernel run (each kind's
intervals merged across streams first), as a share of all time a communication kernel runs.
A rank with no communication kernels has no overlap figure, and says so. Each kind's union is built
a block of events at a time (``kind_union``), the intersection a few communication intervals at a
time (``PIECES_AT``): all at once took 120 MB on a 3 GB trace (docs/scale.md); the same to the bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.trace.gpu_events import KERNEL_TYPES, GpuEvents, kind_union, length
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION

PIECES_AT = 1 << 16
"""Intervals (of both unions) intersected at a time, at least one communication interval."""


@dataclass
class Overlap:
    communication_us: float  # union of communication kernels
    overlapped_us: float  # of which under computation
    exposed_us: float  # of which not
    overlap_pct: float | None
    note: str | None = None


def _pieces(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The lengths of the pieces where both unions run, in time order (zero-length ones included)."""
    (s1, e1), (s2, e2) = a, b
    if len(s1) == 0 or len(s2) == 0:
        return np.zeros(0)
    bounds = np.concatenate([s1, e1, s2, e2])
    delta = np.concatenate([np.full(len(a), d, dtype=np.int8) for a, d in ((s1, 1), (e1, -1), (s2, 2), (e2, -2))])
    order = np.lexsort((delta, bounds))  # ends (negative) before starts at the same time
    t, delta = bounds[order], delta[order]
    del bounds, order
    both = np.cumsum(delta)[:-1] == 3
    return np.diff(t)[both]


def intersection_length(
    a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray], pieces_at: int = PIECES_AT
) -> float:
    """Length of the intersection of two unions of disjoint sorted intervals (``union``'s), ``a``'s
    intervals a few at a time with the ``b`` intervals that reach them: each piece where both run lies
    in one ``a`` interval, whose boundaries and ``b``'s inside it are the same in its chunk as among
    all, so the pieces, and their sum, are the same as one pass over all. Unions with a backward or
    NaN interval are done in one pass, as they always were."""
    (s1, e1), (s2, e2) = a, b
    if not (bool(np.all(e1 >= s1)) and bool(np.all(e2 >= s2))):
        return float(_pieces(a, b).sum())
    first = np.searchsorted(e2, s1, side="left")  # per a interval, the first b interval ending at or after it starts
    stop = np.searchsorted(s2, e1, side="right")  # and past the last one starting at or before it ends
    held = np.arange(len(s1)) + stop  # a intervals and b intervals up to each a interval's end
    parts = []
    i = 0
    while i < len(s1):
        # the most a intervals from i whose chunk holds at most pieces_at intervals (at least one)
        j = int(np.searchsorted(held, i + first[i] + pieces_at, side="right"))
        j = min(max(j, i + 1), len(s1))
        parts.append(_pieces((s1[i:j], e1[i:j]), (s2[first[i] : stop[j - 1]], e2[first[i] : stop[j - 1]])))
        i = j
    return float(np.concatenate(parts).sum()) if parts else 0.0


def overlap(g: GpuEvents) -> Overlap:
    comm, comp = (kind_union(g, KERNEL_TYPES.index(kind)) for kind in (COMMUNICATION, COMPUTATION))
    total = length(*comm)
    if total == 0:
        return Overlap(0.0, 0.0, 0.0, None, "no communication kernels in this trace: nothing to overlap")
    both = intersection_length(comm, comp)
    return Overlap(total, both, total - both, 100.0 * both / total)

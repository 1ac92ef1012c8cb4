"""How much of a rank's communication runs under computation (HTA's ``get_comm_comp_overlap``).

``overlap_pct`` = time when both a communication and a computation kernel run (each kind's
intervals merged across streams first), as a share of all time a communication kernel runs.
A rank with no communication kernels has no overlap figure, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.trace.gpu_events import GpuEvents, length, union
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION


@dataclass
class Overlap:
    communication_us: float  # union of communication kernels
    overlapped_us: float  # of which under computation
    exposed_us: float  # of which not
    overlap_pct: float | None
    note: str | None = None


def intersection_length(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> float:
    """Length of the intersection of two unions of disjoint sorted intervals."""
    (s1, e1), (s2, e2) = a, b
    if len(s1) == 0 or len(s2) == 0:
        return 0.0
    bounds = np.concatenate([s1, e1, s2, e2])
    delta = np.concatenate([np.full(len(a), d, dtype=np.int8) for a, d in ((s1, 1), (e1, -1), (s2, 2), (e2, -2))])
    order = np.lexsort((delta, bounds))  # ends (negative) before starts at the same time
    t, delta = bounds[order], delta[order]
    del bounds, order
    both = np.cumsum(delta)[:-1] == 3
    return float(np.diff(t)[both].sum())


def overlap(g: GpuEvents) -> Overlap:
    comm, comp = (union(*g.spans(g.of_kind(kind))) for kind in (COMMUNICATION, COMPUTATION))
    total = length(*comm)
    if total == 0:
        return Overlap(0.0, 0.0, 0.0, None, "no communication kernels in this trace: nothing to overlap")
    both = intersection_length(comm, comp)
    return Overlap(total, both, total - both, 100.0 * both / total)

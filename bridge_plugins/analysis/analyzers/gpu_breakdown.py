"""Where a rank's GPU time went: computation, communication, memcpy/memset, idle.

The definitions are HolisticTraceAnalysis's (``get_temporal_breakdown``), so the figures can be
checked against it (tests/analysis/test_hta.py); which kernels count, the split of HTA's
non-compute time and where we differ from HTA: docs/analysis-schema.md ("The GPU time breakdown").
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from bridge_plugins.analysis.figures import GpuBreakdown
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import EVENTS_AT, KERNEL_TYPES, NEARLY_SORTED, GpuEvents
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION, MEMORY, OTHER, kernel_type


def kernel_types(d: Collected) -> list[str]:
    """The kernel type of every name id of ``d`` that a GPU event carries (the entries shared past the
    name limit carry theirs); OTHER for the rest, which no reader looks up: a trace's names are
    mostly operators, and classifying each cost a tenth of a trace of 10^6 distinct names."""
    types = [OTHER] * len(d.names)
    ids = np.frombuffer(d.gpu_name, np.int32) if len(d.gpu_name) else np.zeros(0, np.int32)
    for i in np.flatnonzero(np.bincount(ids, minlength=len(d.names))).tolist():
        types[i] = d.name_types.get(i) or kernel_type(d.names[i])
    return types


def kept_gpu_events(d: Collected) -> np.ndarray:
    """Boolean mask over the GPU events: those launched from the captured steps (see module doc)."""
    corr = np.frombuffer(d.gpu_corr, dtype=np.int64) if len(d.gpu_corr) else np.zeros(0, np.int64)
    if len(d.profiler_step_names) < 2 or d.last_profiler_step_end is None:
        return np.ones(len(corr), dtype=bool)
    end = d.last_profiler_step_end
    parts = [corr_[ts <= end] for corr_, ts in d.cpu_call_blocks((0, 1))]  # a block of calls at a time
    launched = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    del parts
    launched.sort(kind=NEARLY_SORTED)  # in place: np.isin or np.unique would take several copies
    if len(launched) == 0:
        return np.zeros(len(corr), dtype=bool)
    return launched[np.minimum(np.searchsorted(launched, corr), len(launched) - 1)] == corr


def _union_length(starts: np.ndarray, ends: np.ndarray) -> float:
    """Total length of the union of intervals [start, end)."""
    if len(starts) == 0:
        return 0.0
    if bool(np.all(starts[1:] >= starts[:-1])):  # sorted already (GpuEvents): the sort would change nothing
        s, e = starts, np.maximum.accumulate(ends)
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], np.maximum.accumulate(ends[order])
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > e[:-1]
    last_of_group = np.append(new_group[1:], True)
    # sum of per-group lengths, not sum(ends) - sum(starts): epoch-microsecond sums lose precision
    return float((e[last_of_group] - s[new_group]).sum())


class _UnionLength:
    """:func:`_union_length` of intervals given in order of start a block at a time, to the bit: the
    same groups, running maximum and per-group lengths (summed once, in order, at the end)."""

    def __init__(self) -> None:
        self.lengths: list[np.ndarray] = []
        self.open: tuple[float, float] | None = None  # the last group so far: its start, running max
        self.most = -np.inf  # the running maximum of every end so far

    def add(self, s: np.ndarray, e: np.ndarray) -> None:
        if not len(s):
            return
        acc = np.maximum.accumulate(e)
        np.maximum(acc, self.most, out=acc)
        new = np.empty(len(s), dtype=bool)
        new[0] = self.open is None or bool(s[0] > self.most)
        np.greater(s[1:], acc[:-1], out=new[1:])
        starts, ends = s[new], acc[np.append(new[1:], True)]
        if self.open is not None and new[0]:
            self.lengths.append(np.array([self.open[1] - self.open[0]]))
        if self.open is not None and not new[0]:
            starts = np.concatenate(([self.open[0]], starts))
        self.lengths.append(ends[:-1] - starts[:-1])
        self.open, self.most = (float(starts[-1]), float(ends[-1])), float(acc[-1])

    def length(self) -> float:
        if self.open is None:
            return 0.0
        return float(np.concatenate([*self.lengths, np.array([self.open[1] - self.open[0]])]).sum())


def breakdown(g: GpuEvents, gpu_count: int) -> GpuBreakdown | None:
    """The window's GPU time split (us), or None for a trace without GPU events kept; ``gpu_count``:
    the GPU events before the kept ones were picked. ``EVENTS_AT`` events at a time (issue 32:
    a few columns of every event took 100 MB on a 3 GB trace), but for events out of order."""
    if len(g.ts) == 0:
        return None
    if not bool(np.all(g.ts[1:] >= g.ts[:-1])):
        return _breakdown_whole(g, gpu_count)
    codes = [KERNEL_TYPES.index(t) for t in (COMPUTATION, COMMUNICATION, MEMORY)]
    span = float(np.max([(g.ts[a : a + EVENTS_AT] - g.ts[0] + g.dur[a : a + EVENTS_AT]).max() for a in _blocks(g)]))
    busy, computation, comp_or_comm, comm = (
        _kind_union_length(g, pick)  # one at a time: each holds its groups' lengths
        for pick in (None, lambda k: k == codes[0], lambda k: k != codes[2], lambda k: k == codes[1])
    )
    return _figures(g, gpu_count, span, busy, computation, comp_or_comm, comm)


def _blocks(g: GpuEvents) -> range:
    return range(0, len(g.ts), EVENTS_AT)


def _kind_union_length(g: GpuEvents, pick: Callable[[np.ndarray], np.ndarray] | None) -> float:
    """:func:`_union_length` of the events whose kind codes ``pick`` keeps (None: all), relative to
    the first event's start, ``EVENTS_AT`` at a time."""
    union = _UnionLength()
    for a in _blocks(g):
        ts = g.ts[a : a + EVENTS_AT] - g.ts[0]  # relative to the first GPU event: small numbers keep full precision
        end = ts + g.dur[a : a + EVENTS_AT]
        if pick is None:
            union.add(ts, end)
        else:
            mask = pick(g.kind[a : a + EVENTS_AT])
            union.add(ts[mask], end[mask])
    return union.length()


def _breakdown_whole(g: GpuEvents, gpu_count: int) -> GpuBreakdown:
    """:func:`breakdown` over every event at once."""
    ts = g.ts - g.ts[0]
    end = ts + g.dur
    kinds = (COMPUTATION, COMMUNICATION, MEMORY)  # GpuEvents.kind: a one-byte code per event
    comp, comm, mem = (g.of_kind(t) for t in kinds)
    span = float(end.max())
    busy = _union_length(ts, end)
    computation = _union_length(ts[comp], end[comp])
    not_memory = ~mem
    comp_or_comm = _union_length(ts[not_memory], end[not_memory])  # computation, communication, other
    return _figures(g, gpu_count, span, busy, computation, comp_or_comm, _union_length(ts[comm], end[comm]))


def _figures(
    g: GpuEvents, gpu_count: int, span: float, busy: float, computation: float, comp_or_comm: float, comm: float
) -> GpuBreakdown:
    return GpuBreakdown(
        span_us=span,
        computation_us=computation,
        communication_us=comp_or_comm - computation,
        memory_us=busy - comp_or_comm,
        idle_us=span - busy,
        communication_total_us=comm,
        gpu_events=len(g.ts),
        gpu_events_dropped=gpu_count - len(g.ts),
    )


PARTS = ("computation", "communication", "memory", "idle")
"""The four parts the GPU span splits into, in the order the tables show them."""


def parts_us(g: GpuBreakdown) -> dict[str, float]:
    """Each part of ``PARTS`` to its time: the breakdown's ``<part>_us`` fields by part name."""
    return {
        "computation": g.computation_us,
        "communication": g.communication_us,
        "memory": g.memory_us,
        "idle": g.idle_us,
    }

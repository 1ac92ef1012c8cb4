"""The kept GPU events of one trace as numpy arrays, joined to the CPU calls that launched them.

Built once per trace from the collector's arrays (which they replace) and shared by every analyzer,
so each question (overlap, idle, launches, queue, bandwidth...) is a few vectorized lines over the
same columns. Compact, as the memory a trace takes must not grow past a few bytes an event
(issue 18): one-byte codes, 32-bit indices, only the launch calls something was joined to.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Final

import numpy as np
from numpy.typing import DTypeLike

from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION, MEMORY, OTHER

# CUDA/HIP runtime calls that put work on a stream (HTA's list, trace_symbol_table.py)
LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "hipLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipMemsetAsync",
        "hipMemcpyAsync",
        "hipMemcpyWithStream",
        "runFunction - job_prep_and_submit_for_execution",
    }
)


KERNEL_TYPES = (COMPUTATION, COMMUNICATION, MEMORY, OTHER)
"""The kernel types (kernel_types.kernel_type), in the order of the one-byte codes of ``GpuEvents.kind``."""


EVENTS_AT = 1 << 16
"""GPU events taken at a time where each needs a few columns of its own (issue 32)."""


def _index_type(n: int) -> type[np.signedinteger]:
    return np.int32 if n < 2**31 else np.int64


@dataclass
class GpuEvents:
    """Columns over the kept GPU events, sorted by start (issue 18: 31 bytes an event, the only copy
    of the GPU columns once built: see :func:`joined`)."""

    index: np.ndarray  # position among the collector's GPU events (int32)
    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray  # name id (int32)
    stream: np.ndarray  # code into ``streams`` (int8 or wider)
    streams: np.ndarray  # the distinct stream numbers, sorted (so codes sort as streams do)
    cat: np.ndarray  # GPU_KERNEL, GPU_MEMCPY... (int8)
    kind: np.ndarray  # code into KERNEL_TYPES (int8)
    launch: np.ndarray  # index into CpuCalls of the call with the same correlation, -1 if none

    @property
    def end(self) -> np.ndarray:
        """ts + dur, computed when asked rather than held (10 MB a million events)."""
        return self.ts + self.dur

    def spans(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(start, end) of the events in ``mask``: ``end[mask]`` without a whole ``end`` first."""
        starts = self.ts[mask]
        ends = self.dur[mask]
        ends += starts  # dur + ts: the same sum as ts + dur
        return starts, ends

    def of_kind(self, kind: str) -> np.ndarray:
        return self.kind == KERNEL_TYPES.index(kind)

    def kind_names(self, codes: np.ndarray) -> list[str]:
        """The kernel type of each code of ``kind`` given."""
        return [KERNEL_TYPES[k] for k in codes.tolist()]


@dataclass
class CpuCalls:
    """The CPU calls with a correlation (cuda_runtime calls) that launched a kept GPU event, as
    columns (``GpuEvents.launch`` indexes them). A pass over every call: Collected.cpu_call_blocks."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    thread: np.ndarray
    count: int  # every CPU call with a correlation in the trace


def joined(d: Collected, keep: np.ndarray, types: list[str]) -> tuple[GpuEvents, CpuCalls]:
    """The kept GPU events, sorted by start, each joined to the first CPU call of its correlation,
    and those calls. Takes the collector's GPU columns (Collected.take_gpu_columns), a column at a
    time, so that the GPU events are never held twice."""
    cols = d.take_gpu_columns()
    index = np.flatnonzero(keep).astype(_index_type(len(keep)))  # 4 bytes an event, from here
    ts = _take(cols, "gpu_ts", np.float64, index)
    if not bool(np.all(ts[1:] >= ts[:-1])):
        # one permuted copy at a time: the sort's peak is the order and three columns, not five
        order = np.argsort(ts, kind="stable")
        index = index[order]
        ts = ts[order]
        del order
    dur = _take(cols, "gpu_dur", np.float64, index)
    name = _take(cols, "gpu_name", np.int32, index)
    code_of_name = np.array(
        [KERNEL_TYPES.index(t) for t in types] + [0], dtype=np.int8
    )  # one more: an empty list indexes
    cat = _take(cols, "gpu_cat", np.int8, index)
    streams, stream = stream_codes(cols.pop("gpu_stream"), index)
    launch, calls = _launches(d, cols.pop("gpu_corr"), index)
    g = GpuEvents(index, ts, dur, name, stream, streams, cat, code_of_name[name], launch)
    return g, calls


def _take(cols: dict[str, array], field: str, dtype: DTypeLike, index: np.ndarray) -> np.ndarray:
    """The kept events' values of one collector column, in ``index`` order; the column goes."""
    column = cols.pop(field)
    return np.frombuffer(column, dtype=dtype)[index] if len(column) else np.zeros(0, dtype=dtype)


def stream_codes(column: array, index: np.ndarray, events_at: int = EVENTS_AT) -> tuple[np.ndarray, np.ndarray]:
    """The distinct stream numbers of the kept events (sorted) and each one's code into them, as
    ``np.unique(..., return_inverse=True)`` gives them, ``events_at`` events at a time: never the
    numbers of every event as int64 at once, nor the sort of them (64 MB on a 3 GB trace)."""
    values = np.frombuffer(column, dtype=np.int64) if len(column) else np.zeros(0, dtype=np.int64)
    blocks = range(0, len(index), events_at)
    streams = sorted_distinct(
        np.concatenate([np.zeros(0, np.int64), *(sorted_distinct(values[index[a : a + events_at]]) for a in blocks)])
    )
    codes = np.empty(
        len(index), dtype=np.int8 if len(streams) < 2**7 else np.int16 if len(streams) < 2**15 else np.int32
    )
    for a in blocks:
        codes[a : a + events_at] = np.searchsorted(streams, values[index[a : a + events_at]])
    return streams, codes


def _launches(d: Collected, corr: array, index: np.ndarray) -> tuple[np.ndarray, CpuCalls]:
    """For each kept GPU event's correlation (``corr``, the collector's column, in ``index`` order),
    the index of the first CPU call with it (-1: none) among the calls so found, and those calls:
    two passes over the calls a block at a time, never all of them whole (the first block that has a
    correlation holds its first call), and the events ``EVENTS_AT`` at a time (issue 32)."""
    first = _first_calls(d, np.frombuffer(corr, dtype=np.int64) if len(corr) else np.zeros(0, np.int64), index)
    del corr  # the collector's column: not held while the calls are read
    used = sorted_distinct(first[first >= 0], in_place=True)
    launch = np.full(len(first), -1, dtype=_index_type(len(used)))
    for a in range(0, len(first), EVENTS_AT):
        part, out_part = first[a : a + EVENTS_AT], launch[a : a + EVENTS_AT]
        has = part >= 0
        out_part[has] = np.searchsorted(used, part[has])
    del first
    out = [np.empty(len(used), dtype) for dtype in (np.float64, np.float64, np.int32, np.int32)]
    at = 0
    for block in d.cpu_call_blocks((1, 2, 3, 4)):
        n = len(block[0])
        lo, hi = np.searchsorted(used, [at, at + n])
        pick = used[lo:hi] - at
        for column, values in zip(out, block, strict=True):
            column[lo:hi] = values[pick]
        at += n
    ts, dur, name, thread = out
    return launch, CpuCalls(ts, dur, name, thread, d.cpu_call_count())


NEARLY_SORTED: Final = "stable"
"""numpy's sort ``kind`` for values nearly in order already (times, correlation ids, the indices of
events in time order): its stable sort (timsort) takes one pass over runs already sorted, 0.3-0.5 ms
for 185 k such values against 8 ms for the default (introsort, vectorized, blind to the order).
Twice as slow on values in random order: not for those. Equal values are alike, so the result is."""


def sorted_distinct(values: np.ndarray, in_place: bool = False) -> np.ndarray:
    """``np.unique(values)`` through a sort: numpy 2's hashing unique takes 30x as long on a hundred
    thousand distinct integers (29 ms against 0.9 ms), 1.5 % of a 200 MB trace's ``summary``.
    ``in_place``: ``values`` is the caller's own to sort, without a copy."""
    if in_place:
        values.sort(kind=NEARLY_SORTED)
    s = values if in_place else np.sort(values, kind=NEARLY_SORTED)
    return s[np.concatenate(([True], s[1:] != s[:-1]))] if len(s) else s


def _first_calls(d: Collected, corr: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Per event (``index`` into ``corr``), the index among every CPU call of the first with its
    correlation, -1 if none."""
    first = np.full(len(index), -1, dtype=_index_type(d.cpu_call_count()))
    left, at = len(index), 0
    for (keys,) in d.cpu_call_blocks((0,)):
        if left == 0:
            break
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        for a in range(0, len(index), EVENTS_AT):
            part = first[a : a + EVENTS_AT]
            todo = np.flatnonzero(part < 0)
            if len(todo):
                found = _lookup(sorted_keys, order, corr[index[a + todo]])
                hit = found >= 0
                part[todo[hit]] = at + found[hit]
                left -= int(hit.sum())
        at += len(keys)
    return first


def _lookup(sorted_keys: np.ndarray, order: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """:func:`match` with the keys sorted already (``order``: a stable argsort of them)."""
    if len(sorted_keys) == 0 or len(queries) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    pos = np.minimum(np.searchsorted(sorted_keys, queries), len(sorted_keys) - 1)
    return np.where(sorted_keys[pos] == queries, order[pos], -1)


def match(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query, the index of its first occurrence in ``keys``, or -1."""
    order = np.argsort(keys, kind="stable")
    return _lookup(keys[order], order, queries)


def union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [start, end) as sorted, disjoint intervals (touching ones merged)."""
    if len(starts) == 0:
        return starts, ends
    if bool(np.all(starts[1:] >= starts[:-1])):  # already sorted (a thread's operators): no copies
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    new = np.ones(len(s), dtype=bool)
    new[1:] = s[1:] > np.maximum.accumulate(e)[:-1]
    return s[new], np.maximum.reduceat(e, np.flatnonzero(new))


def kind_union(g: GpuEvents, code: int, events_at: int = EVENTS_AT) -> tuple[np.ndarray, np.ndarray]:
    """``union(*g.spans(g.kind == code))``, ``events_at`` events at a time: the events are sorted by
    start, so each block's union, with the last interval so far put first, merges as one pass would
    (a later interval can only reach the last one); only that one is carried on."""
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    carry = (np.zeros(0), np.zeros(0))
    for a in range(0, len(g.ts), events_at):
        mask = g.kind[a : a + events_at] == code
        s = g.ts[a : a + events_at][mask]
        e = g.dur[a : a + events_at][mask]
        e += s  # dur + ts, as GpuEvents.spans
        s, e = union(np.concatenate([carry[0], s]), np.concatenate([carry[1], e]))
        starts.append(s[:-1])
        ends.append(e[:-1])
        carry = (s[-1:], e[-1:])
    starts.append(carry[0])
    ends.append(carry[1])
    whole_starts = np.concatenate(starts)
    del starts
    return whole_starts, np.concatenate(ends)


def length(starts: np.ndarray, ends: np.ndarray) -> float:
    return float((ends - starts).sum())

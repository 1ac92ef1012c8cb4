"""The kept GPU events of one trace as numpy arrays, joined to the CPU calls that launched them.

Built once per trace from the collector's arrays and shared by every analyzer, so each question
(overlap, idle, launches, queue, bandwidth...) is a few vectorized lines over the same columns.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

import numpy as np
from numpy.typing import DTypeLike

from bridge_plugins.analysis.trace.collect import Collected

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


def _arr(a: array, dtype: DTypeLike) -> np.ndarray:
    return np.frombuffer(a, dtype=dtype) if len(a) else np.zeros(0, dtype=dtype)


@dataclass
class GpuEvents:
    """Columns over the kept GPU events (``index`` maps back to the collector's arrays), sorted by start."""

    index: np.ndarray
    ts: np.ndarray
    end: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    stream: np.ndarray
    cat: np.ndarray
    corr: np.ndarray
    kind: np.ndarray  # computation / communication / memory / other, per event
    launch: np.ndarray  # index of the CPU runtime call with the same correlation, -1 if none

    def of_kind(self, kind: str) -> np.ndarray:
        return self.kind == kind


@dataclass
class CpuCalls:
    """The collector's CPU events that carry a correlation id (cuda_runtime calls), as columns."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    corr: np.ndarray
    thread: np.ndarray


def cpu_calls(d: Collected) -> CpuCalls:
    """Whole columns, spilled parts included (the collector's arrays hold only the latest elements)."""
    corr, ts, dur, name, thread = d.cpu_calls()
    return CpuCalls(ts, dur, name, corr, thread)


def gpu_events(d: Collected, keep: np.ndarray, types: list[str], calls: CpuCalls) -> GpuEvents:
    """The kept GPU events, sorted by start, each joined to the first CPU call of its correlation."""
    index = np.flatnonzero(keep)
    ts = _arr(d.gpu_ts, np.float64)[index]
    order = np.argsort(ts, kind="stable")
    index, ts = index[order], ts[order]
    dur = _arr(d.gpu_dur, np.float64)[index]
    name = _arr(d.gpu_name, np.int32)[index]
    type_of_name = np.array(types + [""], dtype=object)  # one more so an empty list still indexes
    corr = _arr(d.gpu_corr, np.int64)[index]
    return GpuEvents(
        index=index,
        ts=ts,
        end=ts + dur,
        dur=dur,
        name=name,
        stream=_arr(d.gpu_stream, np.int64)[index],
        cat=_arr(d.gpu_cat, np.int8)[index],
        corr=corr,
        kind=type_of_name[name] if len(name) else np.zeros(0, dtype=object),
        launch=match(calls.corr, corr),
    )


def match(keys: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query, the index of its first occurrence in ``keys``, or -1."""
    if len(keys) == 0 or len(queries) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    order = np.argsort(keys, kind="stable")
    sorted_keys = keys[order]
    pos = np.searchsorted(sorted_keys, queries)
    pos_clipped = np.minimum(pos, len(keys) - 1)
    found = sorted_keys[pos_clipped] == queries
    return np.where(found, order[pos_clipped], -1)


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


def length(starts: np.ndarray, ends: np.ndarray) -> float:
    return float((ends - starts).sum())

"""Operator and kernel tables: CPU operators by self time, GPU kernels by total time.

Self time of a CPU operator is its duration minus that of the operators nested directly inside it
on the same thread (Chrome complete events nest by time on one thread). Kernels are timed as they
ran on the GPU; the kernel table covers the same GPU events as the breakdown (gpu_breakdown).
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

import numpy as np

from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.nesting import direct_parents, in_nesting_order, nesting_order

if TYPE_CHECKING:
    from bridge_plugins.analysis.schema import KernelRow, OpRow


def _per_name(n_names: int, ids: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per name id: the summed ``values`` and the count."""
    return np.bincount(ids, weights=values, minlength=n_names), np.bincount(ids, minlength=n_names)


def _child_time(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Per operator, the summed duration of the operators nested directly inside it (same thread)."""
    order = None if in_nesting_order(ts, dur) else nesting_order(ts, dur)  # by start, the enclosing one first
    starts, durs = (ts, dur) if order is None else (ts[order], dur[order])
    with np.errstate(invalid="ignore"):
        ends = starts + durs
    if np.isnan(ends).any():  # -inf + inf: no order to nest by; the walk below decides as it always did
        return _child_time_walk(np.arange(len(ts)) if order is None else order, starts, durs)
    parent = direct_parents(starts, ends)
    del ends
    inside = parent >= 0
    parents = parent[inside] if order is None else order[parent[inside]]
    # bincount adds each parent's children in this order, as the walk did: the same sums to the last bit
    child = np.bincount(parents, weights=durs[inside], minlength=len(ts))
    return child.astype(np.float64, copy=False)  # no children at all: bincount gives ints


_BLOCK = 65536  # operators turned into Python floats at a time: the loop's memory stays flat


def _child_time_walk(order: np.ndarray, ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """_child_time by a walk with a stack of open operators (``ts``, ``dur`` in ``order``)."""
    child = array("d", [0.0]) * len(ts)
    stack: list[int] = []
    stack_end: list[float] = []
    for at in range(0, len(order), _BLOCK):
        idx = order[at : at + _BLOCK]
        starts, durs = ts[at : at + _BLOCK].tolist(), dur[at : at + _BLOCK].tolist()
        for i, start, length in zip(idx.tolist(), starts, durs, strict=True):
            while stack_end and start >= stack_end[-1]:
                stack.pop()
                stack_end.pop()
            if stack:
                child[stack[-1]] += length
            stack.append(i)
            stack_end.append(start + length)
    return np.frombuffer(child, np.float64)


def cpu_ops(d: Collected) -> list[OpRow]:
    """Every CPU operator, largest self time first (ties by name, so any first N rows are always the same)."""
    n = len(d.names)
    self_us, total_us, calls = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    for _, ts, dur, ids in d.thread_ops():
        self_time = _child_time(ts, dur)
        np.subtract(dur, self_time, out=self_time)
        s, c = _per_name(n, ids, np.maximum(self_time, 0.0, out=self_time))
        self_us += s
        total_us += np.bincount(ids, weights=dur, minlength=n)
        calls += c
    rows: list[OpRow] = [
        {"name": d.names[i], "self_us": float(self_us[i]), "total_us": float(total_us[i]), "calls": int(calls[i])}
        for i in np.flatnonzero(calls)
    ]
    return sorted(rows, key=lambda r: (-r["self_us"], r["name"]))


def gpu_kernels(d: Collected, keep: np.ndarray, types: list[str]) -> list[KernelRow]:
    """Every GPU kernel/memcpy/memset kept, largest total time first (ties by name)."""
    ids = np.frombuffer(d.gpu_name, np.int32)[keep] if len(d.gpu_name) else np.zeros(0, np.int32)
    dur = np.frombuffer(d.gpu_dur, np.float64)[keep] if len(d.gpu_dur) else np.zeros(0)
    total, calls = _per_name(len(d.names), ids, dur)
    rows: list[KernelRow] = [
        {"name": d.names[i], "type": types[i], "total_us": float(total[i]), "calls": int(calls[i])}
        for i in np.flatnonzero(calls)
    ]
    return sorted(rows, key=lambda r: (-r["total_us"], r["name"]))

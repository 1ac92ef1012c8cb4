"""Operator and kernel tables: CPU operators by self time, GPU kernels by total time.

Self time of a CPU operator is its duration minus that of the operators nested directly inside it
on the same thread (Chrome complete events nest by time on one thread). Kernels are timed as they
ran on the GPU; the kernel table covers the same GPU events as the breakdown (gpu_breakdown).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator

import numpy as np

from bridge_plugins.analysis.figures import KernelRow, OpRow
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.nesting import (
    blocks_in_nesting_order,
    direct_parents,
    in_nesting_order,
    nesting_order,
)


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
    for key in d.ops:
        if blocks_in_nesting_order(d.ops.blocks(key)):
            s, t, c = _thread_sums_by_block(n, d.ops.blocks(key))
        else:
            s, t, c = _thread_sums(n, *d.ops[key])
        self_us += s
        total_us += t
        calls += c
    used = np.flatnonzero(calls)  # as Python numbers in one call per column: 10^5 names are 10^5 rows
    names = d.names
    rows = [
        OpRow(name=names[i], self_us=s, total_us=t, calls=c)
        for i, s, t, c in zip(
            used.tolist(), self_us[used].tolist(), total_us[used].tolist(), calls[used].tolist(), strict=True
        )
    ]
    return sorted(rows, key=lambda r: (-r.self_us, r.name))


def _thread_sums(n: int, ts: np.ndarray, dur: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per name id: a thread's summed self time, summed duration and calls, from its whole columns."""
    self_time = _child_time(ts, dur)
    np.subtract(dur, self_time, out=self_time)
    s, c = _per_name(n, ids, np.maximum(self_time, 0.0, out=self_time))
    return s, np.bincount(ids, weights=dur, minlength=n), c


def _thread_sums_by_block(n: int, blocks: Iterator[list[np.ndarray]]) -> tuple[np.ndarray, ...]:
    """:func:`_thread_sums` of a thread whose events are in nesting order (no NaN end), given a block
    of (ts, dur, name id) at a time: the same sums to the last bit, in a few MB.

    Each block's events find their direct parents among themselves and the events still open
    before it (the walk's stack, carried over). An event's self time is known once it has closed;
    it is added in trace order, as ``np.bincount`` adds, so the events from the oldest open one on
    wait (``pending``): a few, unless an operator stays open for much of the thread."""
    self_us, total_us, calls = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
    pending = _Pending()
    at = 0  # index in the thread of the block's first event
    for ts, dur, ids in blocks:
        ends = ts + dur
        open_ = pending.stack - pending.base
        k = len(open_)
        local = direct_parents(
            np.concatenate([pending.starts[open_], ts]), np.concatenate([pending.ends[open_], ends])
        )[k:].astype(np.int64)
        parent = np.where(local < k, pending.stack[np.minimum(local, k - 1)] if k else -1, at + local - k)
        parent[local < 0] = -1
        pending.add(ts, ends, dur, ids, parent)
        inside = parent >= 0
        np.add.at(pending.child, parent[inside] - pending.base, dur[inside])  # in trace order, as bincount
        np.add.at(total_us, ids, dur)
        calls += np.bincount(ids, minlength=n)
        at += len(ts)
        pending.stack = pending.open_at(at - 1)
        pending.close(int(pending.stack[0]) if len(pending.stack) else at, self_us)
    pending.close(at, self_us)
    return self_us, total_us, calls


class _Pending:
    """A thread's events from the oldest still open on (index ``base`` on), for _thread_sums_by_block."""

    def __init__(self) -> None:
        self.base = 0
        self.starts, self.ends, self.dur, self.child = (np.zeros(0) for _ in range(4))
        self.ids = np.zeros(0, dtype=np.int32)
        self.parent = np.zeros(0, dtype=np.int64)
        self.stack = np.zeros(0, dtype=np.int64)  # the open events, outermost first

    def add(self, starts: np.ndarray, ends: np.ndarray, dur: np.ndarray, ids: np.ndarray, parent: np.ndarray) -> None:
        self.starts, self.ends = np.concatenate([self.starts, starts]), np.concatenate([self.ends, ends])
        self.dur, self.ids = np.concatenate([self.dur, dur]), np.concatenate([self.ids, ids])
        self.parent = np.concatenate([self.parent, parent])
        self.child = np.concatenate([self.child, np.zeros(len(starts))])

    def open_at(self, last: int) -> np.ndarray:
        """The walk's stack after event ``last``: it and the chain of its parents, outermost first."""
        chain = []
        while last >= 0:
            chain.append(last)
            last = int(self.parent[last - self.base])
        return np.array(chain[::-1], dtype=np.int64)

    def close(self, upto: int, self_us: np.ndarray) -> None:
        """Add the self time of the events before index ``upto`` (all closed) to ``self_us``, in order."""
        done = upto - self.base
        if done <= 0:
            return
        self_time = np.subtract(self.dur[:done], self.child[:done])
        np.add.at(self_us, self.ids[:done], np.maximum(self_time, 0.0, out=self_time))
        for name in ("starts", "ends", "dur", "child", "ids", "parent"):
            setattr(self, name, getattr(self, name)[done:].copy())
        self.base = upto


def gpu_kernels(d: Collected, keep: np.ndarray, types: list[str]) -> list[KernelRow]:
    """Every GPU kernel/memcpy/memset kept, largest total time first (ties by name)."""
    ids = np.frombuffer(d.gpu_name, np.int32)[keep] if len(d.gpu_name) else np.zeros(0, np.int32)
    dur = np.frombuffer(d.gpu_dur, np.float64)[keep] if len(d.gpu_dur) else np.zeros(0)
    total, calls = _per_name(len(d.names), ids, dur)
    rows = [
        KernelRow(name=d.names[i], type=types[i], total_us=float(total[i]), calls=int(calls[i]))
        for i in np.flatnonzero(calls)
    ]
    return sorted(rows, key=lambda r: (-r.total_us, r.name))

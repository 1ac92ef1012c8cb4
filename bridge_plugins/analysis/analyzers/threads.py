"""Nesting of CPU events on a thread: which operator or Python frame was running at a time.

A thread's columns can be tens of MB (2.5 M operators in a 3 GB trace): the passes over a whole
thread here go a block at a time (ThreadColumns.blocks) when the events are in nesting order, as
Kineto writes them, and read the thread whole only when they must be sorted first.
"""

from __future__ import annotations

import numpy as np

from bridge_plugins.analysis.trace.gpu_events import union
from bridge_plugins.analysis.trace.nesting import blocks_in_nesting_order, in_nesting_order, nesting_order
from bridge_plugins.analysis.trace.spill import ThreadColumns


def columns(arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name id) of a thread's events (a ThreadColumns entry), sorted by start, enclosing first."""
    ts, dur, name = (np.asarray(a) for a in arrays)
    if in_nesting_order(ts, dur):  # the usual case: no copies (a main thread's columns are tens of MB)
        return ts, ts + dur, name
    order = nesting_order(ts, dur)
    return ts[order], (ts + dur)[order], name[order]


def top_level(table: ThreadColumns, key: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name id) of the thread's events that are not inside another (see
    :func:`outermost`), by start: what ``outermost`` needs of a thread, found a block at a time."""
    if not blocks_in_nesting_order(table.blocks(key)):
        starts, ends, names = columns(table[key])
        m = _is_top(starts, ends, -np.inf)[0]
        return starts[m], ends[m], names[m]
    found, running = [], -np.inf  # the latest end of the events before the block
    for ts, dur, ids in table.blocks(key):
        m, running = _is_top(ts, ts + dur, running)
        found.append((ts[m], (ts + dur)[m], ids[m]))
    starts, ends, names = (np.concatenate([f[i] for f in found]) for i in range(3))
    return starts, ends, names


def _is_top(starts: np.ndarray, ends: np.ndarray, before: float) -> tuple[np.ndarray, float]:
    """Which events start at or after every earlier one's end (``before``: the latest end of those
    before these), and the latest end after them."""
    if len(starts) == 0:
        return np.zeros(0, dtype=bool), before
    latest = np.maximum.accumulate(np.concatenate([[before], ends]))
    return starts >= latest[:-1], float(latest[-1])


def covered(table: ThreadColumns, key: tuple) -> tuple[np.ndarray, np.ndarray]:
    """The union of the thread's events as sorted disjoint intervals (gpu_events.union), a block at a
    time: each block's union with the last interval of the blocks before it."""
    if not blocks_in_nesting_order(table.blocks(key)):
        starts, ends, _ = columns(table[key])
        return union(starts, ends)
    s_parts: list[np.ndarray] = []
    e_parts: list[np.ndarray] = []
    for ts, dur, _ in table.blocks(key):
        starts, ends = ts, ts + dur
        if s_parts:  # the open interval goes on into this block
            starts, ends = np.concatenate([s_parts.pop(), starts]), np.concatenate([e_parts.pop(), ends])
        if len(starts):
            s, e = union(starts, ends)
            s_parts += [s[:-1], s[-1:]]
            e_parts += [e[:-1], e[-1:]]
    return (np.concatenate(s_parts), np.concatenate(e_parts)) if s_parts else (np.zeros(0), np.zeros(0))


def overlapping(table: ThreadColumns, key: tuple, lo: float, hi: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name id) of the thread's events that overlap the window (lo, hi), by start,
    enclosing first (as :func:`columns` sorts them), found a block at a time."""
    if not blocks_in_nesting_order(table.blocks(key)):
        starts, ends, names = columns(table[key])
        m = (ends > lo) & (starts < hi)
        return starts[m], ends[m], names[m]
    found = []
    for ts, dur, ids in table.blocks(key):
        ends = ts + dur
        m = (ends > lo) & (ts < hi)
        found.append((ts[m], ends[m], ids[m]))
    starts, ends, names = (np.concatenate([f[i] for f in found]) for i in range(3))
    return starts, ends, names


def outermost(starts: np.ndarray, ends: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query time, the index of the top-level event (not inside another) containing it, or -1."""
    if len(starts) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    top = np.ones(len(starts), dtype=bool)
    top[1:] = starts[1:] >= np.maximum.accumulate(ends)[:-1]
    top_idx = np.flatnonzero(top)
    pos = np.searchsorted(starts[top_idx], queries, side="right") - 1
    ok = (pos >= 0) & (queries <= ends[top_idx[np.maximum(pos, 0)]])
    return np.where(ok, top_idx[np.maximum(pos, 0)], -1)


def containing_top(starts: np.ndarray, ends: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For top-level events (:func:`top_level`), the index of the one containing each query time, or
    -1: :func:`outermost` with its events already picked."""
    if len(starts) == 0:
        return np.full(len(queries), -1, dtype=np.int64)
    pos = np.searchsorted(starts, queries, side="right")
    pos -= 1
    pos[(pos < 0) | ~(queries <= ends[np.maximum(pos, 0)])] = -1
    return pos


def enclosing(starts: np.ndarray, ends: np.ndarray, t: float) -> np.ndarray:
    """Indices of the events containing time t, outermost first."""
    return np.flatnonzero((starts <= t) & (ends >= t))


def innermost(starts: np.ndarray, ends: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """For each query time (any order), the index of the innermost event containing it, or -1."""
    out = np.full(len(queries), -1, dtype=np.int64)
    if len(starts) == 0 or len(queries) == 0:
        return out
    q_order = np.argsort(queries, kind="stable")
    s, e, qs = starts.tolist(), ends.tolist(), queries[q_order].tolist()
    stack: list[int] = []
    i = 0
    for qi, q in zip(q_order.tolist(), qs, strict=True):
        while i < len(s) and s[i] <= q:
            while stack and e[stack[-1]] < s[i]:
                stack.pop()
            stack.append(i)
            i += 1
        while stack and e[stack[-1]] < q:
            stack.pop()
        if stack:
            out[qi] = stack[-1]
    return out

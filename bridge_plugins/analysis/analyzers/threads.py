"""Nesting of CPU events on a thread: which operator or Python frame was running at a time."""

from __future__ import annotations

import numpy as np

from bridge_plugins.analysis.trace.nesting import in_nesting_order, nesting_order


def columns(arrays: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start, end, name id) of a thread's events (a ThreadColumns entry), sorted by start, enclosing first."""
    ts, dur, name = (np.asarray(a) for a in arrays)
    if in_nesting_order(ts, dur):  # the usual case: no copies (a main thread's columns are tens of MB)
        return ts, ts + dur, name
    order = nesting_order(ts, dur)
    return ts[order], (ts + dur)[order], name[order]


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

"""Interval unions for the step breakdown, and the runtime calls' union a few steps at a time.

The CUDA runtime calls barely overlap, so their union is as long as the calls: 16 bytes a call,
and several times that while it is merged (issue 32: 190 MB more peak RSS on a 3 GB trace). The
steps only ever look at the union inside themselves, so it is built for a window of consecutive
steps at a time (at most about ``WINDOW_SPANS`` calls), from a pass over the spilled calls each:
what a step sees is the same to the bit (every call that reaches into a step is in its window).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator

import numpy as np

Spans = tuple[np.ndarray, np.ndarray]
WINDOW_SPANS = 1 << 18
"""Calls per window (4 MB of union; a window of one step may hold more)."""
CHUNK = 1 << 15
"""Spans merged into a union at a time, at least (``merged``)."""


def union(starts: list[np.ndarray], ends: list[np.ndarray]) -> Spans:
    """The union of intervals as sorted disjoint (start, end) arrays."""
    s = np.concatenate(starts) if starts else np.zeros(0)
    e = np.concatenate(ends) if ends else np.zeros(0)
    if len(s) == 0:
        return s, e
    order = np.argsort(s, kind="stable")
    s, e = s[order], np.maximum.accumulate(e[order])
    new = np.concatenate(([True], s[1:] > e[:-1]))
    last = np.append(new[1:], True)
    return s[new], e[last]


def within(spans: Spans, lo: float, hi: float) -> Spans:
    """The spans that overlap [lo, hi], clipped to it."""
    s, e = spans
    a, b = int(np.searchsorted(e, lo, side="right")), int(np.searchsorted(s, hi, side="left"))
    return np.clip(s[a:b], lo, hi), np.clip(e[a:b], lo, hi)


Blocks = Callable[[int | None], Iterator[Spans]]
"""The spans a table gives: called with a chunk size (None: each spilled block whole, as read), it
gives (start, end) arrays of at most that many at a time, anew on each call."""


def _forward(s: np.ndarray, e: np.ndarray) -> bool:
    """No span ends before it starts (nor NaN): then a union is the same whatever order it is
    merged in. A trace may say otherwise; those keep the order of merging they always had."""
    return bool(np.all(e >= s))


def merged(blocks: Blocks) -> Spans:
    """The union of the spans, merged once as many wait as the union holds (at least ``CHUNK``):
    memory a few times the union's, and O(n log n) however it grows. With a backward span, the
    union of each spilled block in turn (the order that gave those traces' figures)."""
    out = union([], [])
    starts: list[np.ndarray] = []
    ends: list[np.ndarray] = []
    waiting = 0
    for s, e in blocks(CHUNK):
        if not _forward(s, e):
            return _by_block(blocks(None))
        starts.append(s)
        ends.append(e)
        waiting += len(s)
        if waiting >= max(CHUNK, len(out[0])):
            out = union([out[0], *starts], [out[1], *ends])
            starts, ends, waiting = [], [], 0
    return union([out[0], *starts], [out[1], *ends]) if starts else out


def _by_block(spans: Iterable[Spans]) -> Spans:
    out = union([], [])
    for s, e in spans:
        out = union([out[0], s], [out[1], e])
    return out


def _windows(spans: Iterable[Spans], starts: np.ndarray, limit: int) -> list[tuple[int, int]] | None:
    """Consecutive step ranges [i, j) holding about ``limit`` spans each (counted at the step their
    start falls in); None with a backward span (see :func:`merged`)."""
    counts = np.zeros(len(starts), dtype=np.int64)
    for s, e in spans:
        if not _forward(s, e):
            return None
        k = np.clip(np.searchsorted(starts, s, side="right") - 1, 0, len(starts) - 1)
        counts += np.bincount(k, minlength=len(starts))
    out, first, held = [], 0, 0
    for i, c in enumerate(counts.tolist()):
        if held and held + c > limit:
            out.append((first, i))
            first, held = i, 0
        held += c
    out.append((first, len(starts)))
    return out


def per_step(blocks: Blocks, starts: np.ndarray, ends: np.ndarray) -> Iterator[Spans]:
    """For each step (``starts`` sorted), ``within(merged(blocks), start, end)``, holding the union
    of one window of consecutive steps at a time (a pass over ``blocks`` each, and one to count)."""
    if not len(starts):
        return
    windows = _windows(blocks(CHUNK), starts, WINDOW_SPANS)
    if windows is None:
        whole = _by_block(blocks(None))
        for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True):
            yield within(whole, lo, hi)
        return
    for i, j in windows:
        lo, hi = float(starts[i]), float(ends[i:j].max())
        window = merged(functools.partial(_reaching, blocks, lo, hi))
        for k in range(i, j):
            yield within(window, float(starts[k]), float(ends[k]))


def _reaching(blocks: Blocks, lo: float, hi: float, chunk: int | None) -> Iterator[Spans]:
    """The spans that reach into (lo, hi): every one a step inside [lo, hi] can see."""
    for s, e in blocks(chunk):
        m = (s < hi) & (e > lo)
        yield s[m], e[m]

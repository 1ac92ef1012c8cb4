"""The order in which a thread's CPU events nest: by start, the enclosing (longer) one first."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


def in_nesting_order(ts: np.ndarray, dur: np.ndarray) -> bool:
    """Whether events are already by start, then longest first (Kineto writes each thread's so)."""
    later, earlier = slice(1, None), slice(None, -1)
    return len(ts) < 2 or bool(
        np.all((ts[later] > ts[earlier]) | ((ts[later] == ts[earlier]) & (dur[later] <= dur[earlier])))
    )


def nesting_order(ts: np.ndarray, dur: np.ndarray) -> np.ndarray:
    """Indices that sort events by start, then longest first, ties in their order: what
    ``np.lexsort((-dur, ts))`` gives, without the sort when the events are already so ordered (a
    sort of 10^5 events costs 10 ms)."""
    return np.arange(len(ts)) if in_nesting_order(ts, dur) else np.lexsort((-dur, ts))


def direct_parents(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """For events in nesting order (``starts`` not decreasing; no NaN), the index of the event each
    one is directly inside, or -1: the latest earlier event still running at its start (end after
    it), which is what a walk with a stack of open events gives, partial overlaps included.

    By pointer jumping, all events at once: each points at a candidate (first the event before it);
    while the candidate has ended by then, so had every event between the candidate's own
    candidate and it, and the pointer moves there. The pointers halve their distance to the answer
    each round, so a few dozen numpy passes replace a Python loop over every event. An event that
    starts after every earlier one ended (a top-level one) has none, found in one pass first: those
    are the long chains of siblings that would take the most rounds."""
    index = np.int32 if len(starts) < 2**31 else np.int64  # half the memory for a thread's operators
    parent = np.arange(-1, len(starts) - 1, dtype=index)
    running = np.maximum.accumulate(ends)[:-1] > starts[1:]  # some earlier event still running at its start
    parent[1:][~running] = -1
    active = (np.flatnonzero(running) + 1).astype(index)
    while len(active):
        candidate = parent[active]
        ended = ends[candidate] <= starts[active]
        active = active[ended]
        parent[active] = parent[candidate[ended]]
        active = active[parent[active] >= 0]
    return parent


def blocks_in_nesting_order(blocks: Iterable[Sequence[np.ndarray]]) -> bool:
    """Whether a thread's events, given a block of (ts, dur, ...) columns at a time, are in nesting
    order across the blocks, with no NaN end (``-inf + inf``): then a pass over the blocks with a
    little carried from one to the next gives what one over the whole sorted columns gives."""
    last: tuple[np.ndarray, np.ndarray] | None = None
    for ts, dur, *_ in blocks:
        if not len(ts):
            continue
        with np.errstate(invalid="ignore"):
            if np.isnan(ts + dur).any():
                return False
        if last is not None:
            ts, dur = np.concatenate([last[0], ts]), np.concatenate([last[1], dur])
        if not in_nesting_order(ts, dur):
            return False
        last = ts[-1:], dur[-1:]
    return True

"""nesting_order skips the sort only when it would change nothing: it always equals lexsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.analyzers import op_tables
from bridge_plugins.analysis.trace.nesting import direct_parents, nesting_order

# few distinct values, so ties in start and in duration are common; -0.0 and inf as a trace may hold them
TIMES = st.lists(st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 1e300, float("inf")]), max_size=30)


@given(ts=TIMES, dur=TIMES, presort=st.booleans())
@settings(max_examples=400, deadline=None)
def test_nesting_order_is_lexsorts_order(ts, dur, presort):
    n = min(len(ts), len(dur))
    t, d = np.array(ts[:n]), np.array(dur[:n])
    if presort:  # the common case: already in nesting order, where the sort is skipped
        order = np.lexsort((-d, t))
        t, d = t[order], d[order]
    assert nesting_order(t, d).tolist() == np.lexsort((-d, t)).tolist()


def test_sorted_events_skip_the_sort_and_unsorted_ones_are_sorted():
    t, d = np.array([1.0, 1.0, 2.0]), np.array([5.0, 3.0, 1.0])
    assert nesting_order(t, d).tolist() == [0, 1, 2]
    assert nesting_order(t[::-1].copy(), d[::-1].copy()).tolist() == [2, 1, 0]


def walk_parents(starts: list[float], ends: list[float]) -> list[int]:
    """The reference: a walk with a stack of open events (what ops' self time did event by event)."""
    out, stack = [], []
    for i, s in enumerate(starts):
        while stack and s >= ends[stack[-1]]:
            stack.pop()
        out.append(stack[-1] if stack else -1)
        stack.append(i)
    return out


# durations include negative ones and partial overlaps (hostile traces), starts ties
DURS = st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 7.0, -1.0, 0.5, float("inf")]), min_size=1, max_size=60)


@given(durs=DURS, gaps=st.lists(st.sampled_from([0.0, 0.0, 0.5, 1.0, 4.0]), min_size=60, max_size=60))
@settings(max_examples=500, deadline=None)
def test_direct_parents_are_the_stack_walks(durs, gaps):
    starts = np.cumsum(gaps[: len(durs)])
    ends = starts + np.array(durs)
    assert direct_parents(starts, ends).tolist() == walk_parents(starts.tolist(), ends.tolist())


@given(ts=st.lists(st.sampled_from([0.0, 1.0, 1.5, 3.0, 8.0, -float("inf")]), min_size=1, max_size=40), durs=DURS)
@settings(max_examples=300, deadline=None)
def test_child_time_is_the_walks_to_the_last_bit(ts, durs):
    n = min(len(ts), len(durs))
    t, d = np.array(ts[:n]), np.array(durs[:n]) * 0.1  # sums of 0.1s: any change of order shows in the bits
    order = nesting_order(t, d)
    walked = op_tables._child_time_walk(order, t[order], d[order])
    child = op_tables._child_time(t, d)
    assert child.dtype == np.float64 and child.tobytes() == walked.tobytes()

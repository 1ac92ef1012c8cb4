"""nesting_order skips the sort only when it would change nothing: it always equals lexsort."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.trace.nesting import nesting_order

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

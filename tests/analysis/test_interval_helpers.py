"""The interval helpers the analyzers share: union, nesting (outermost/innermost/enclosing), overlap."""

from __future__ import annotations

import numpy as np

from bridge_plugins.analysis.analyzers.overlap import intersection_length
from bridge_plugins.analysis.analyzers.syncs import _enclosing_any
from bridge_plugins.analysis.analyzers.threads import enclosing, innermost, outermost
from bridge_plugins.analysis.trace.gpu_events import match, union

# a thread: A [0,100) holds B [10,40) holding C [20,30); D [50,60) in A; E [200,300) alone
STARTS = np.array([0.0, 10.0, 20.0, 50.0, 200.0])
ENDS = np.array([100.0, 40.0, 30.0, 60.0, 300.0])


def test_outermost_and_innermost():
    q = np.array([25.0, 55.0, 5.0, 150.0, 250.0, 100.0])
    assert outermost(STARTS, ENDS, q).tolist() == [0, 0, 0, -1, 4, 0]
    assert innermost(STARTS, ENDS, q).tolist() == [2, 3, 0, -1, 4, 0]
    assert innermost(STARTS, ENDS, q[::-1]).tolist() == [0, 4, -1, 0, 3, 2]  # any query order
    assert enclosing(STARTS, ENDS, 25.0).tolist() == [0, 1, 2]


def test_union_merges_overlapping_and_touching():
    s, e = union(np.array([5.0, 0.0, 10.0, 30.0]), np.array([10.0, 6.0, 20.0, 40.0]))
    assert s.tolist() == [0.0, 30.0] and e.tolist() == [20.0, 40.0]


def test_intersection_of_two_unions():
    a = (np.array([0.0, 50.0]), np.array([20.0, 100.0]))
    b = (np.array([10.0, 60.0]), np.array([55.0, 70.0]))
    assert intersection_length(a, b) == 10 + 5 + 10


def test_match_finds_the_first_occurrence():
    assert match(np.array([7, 3, 7, 9]), np.array([7, 9, 4])).tolist() == [0, 3, -1]


def test_enclosing_any_keeps_the_events_that_contain_a_time():
    """Against the definition (start <= t <= end for some t), on random threads with ties at the ends."""
    assert _enclosing_any((STARTS, ENDS - STARTS, np.arange(5)), [25.0, 300.0])[2].tolist() == [0, 1, 2, 4]
    rng = np.random.default_rng(1)
    for _ in range(300):
        n, k = rng.integers(0, 50), rng.integers(0, 8)
        ts = rng.integers(0, 30, n) + rng.choice([0.0, 0.5], n)
        dur = rng.integers(0, 10, n).astype(float)
        times = (rng.integers(0, 40, k) + rng.choice([0.0, 0.5], k)).tolist()
        inside = [i for i in range(n) if any(ts[i] <= t <= ts[i] + dur[i] for t in times)]
        assert _enclosing_any((ts, dur, np.arange(n)), times)[2].tolist() == inside

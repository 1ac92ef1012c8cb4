"""The step breakdown's unions a window of steps at a time (analyzers/step_windows.py, issue 32 point 5):
each step sees the same spans to the bit as from the whole union, and the runtime calls' union is never
built whole (on a 3 GB trace it was 190 MB of peak RSS)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.analyzers import step_breakdown, step_split, step_windows
from bridge_plugins.analysis.analyzers.gpu_breakdown import kept_gpu_events, kernel_types
from bridge_plugins.analysis.trace.collect import STEP_RE
from bridge_plugins.analysis.trace.gpu_events import joined
from bridge_plugins.analysis.trace.split import collect_trace
from tests.analysis.gpu_traces import FIXTURES

TRACES = sorted(FIXTURES.glob("*.json.gz")) + sorted((FIXTURES.parent / "public-traces").glob("*.json.gz"))


def _read(path):
    """The collected trace and its steps as step_splits stretches them (a trace without steps: None)."""
    d = collect_trace(path, 1)
    d.spill_rest()
    keep = kept_gpu_events(d)
    roles = step_breakdown.gpu_role_spans(d, keep)
    g, calls = joined(d, keep, kernel_types(d))
    numbers, starts, ends = step_breakdown._tb_steps(d, g, calls, roles)
    return d, g, calls, roles, starts, ends


def _runtime(d):
    return lambda chunk: step_breakdown._spans((d.runtime,), None, chunk)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:40])
def test_each_step_sees_the_whole_unions_spans_with_one_step_a_window(path, monkeypatch):
    d, _, _, _, starts, ends = _read(path)
    whole = step_windows._by_block(_runtime(d)(None))  # what step_splits merged before windows
    expected = [step_windows.within(whole, lo, hi) for lo, hi in zip(starts.tolist(), ends.tolist(), strict=True)]
    monkeypatch.setattr(step_windows, "WINDOW_SPANS", 1)
    monkeypatch.setattr(step_windows, "CHUNK", 7)
    got = list(step_windows.per_step(_runtime(d), starts, ends))
    assert len(got) == len(expected) == len(d.steps)
    for (s, e), (xs, xe) in zip(got, expected, strict=True):
        assert s.tobytes() == xs.tobytes() and e.tobytes() == xe.tobytes()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:40])
def test_the_stretched_steps_are_the_same_a_few_gpu_events_at_a_time(path, monkeypatch):
    d, g, calls, roles, starts, ends = _read(path)
    monkeypatch.setattr(step_breakdown, "EVENTS_AT", 3)
    _, few_starts, few_ends = step_breakdown._tb_steps(d, g, calls, roles)
    assert few_starts.tobytes() == starts.tobytes() and few_ends.tobytes() == ends.tobytes()


def test_the_runtime_calls_union_is_built_a_window_at_a_time(monkeypatch):
    d, g, calls, roles, starts, ends = _read(FIXTURES / "job2_rank0.json.gz")
    calls_in_all = sum(len(b[0]) for key in d.runtime for b in d.runtime.blocks(key))
    biggest = []

    def union(starts_, ends_):
        biggest.append(sum(map(len, starts_)))
        return real_union(starts_, ends_)

    real_union = step_windows.union
    monkeypatch.setattr(step_windows, "union", union)
    monkeypatch.setattr(step_windows, "WINDOW_SPANS", 1000)  # job2: 8,740 calls in 3 steps
    assert len(list(step_windows.per_step(_runtime(d), starts, ends))) == 3
    assert calls_in_all == 8740
    # the largest union: about one step's calls, never all of them (before windows: 8,740)
    assert max(biggest) < calls_in_all // 2


def test_a_span_that_ends_before_it_starts_keeps_the_merge_order_it_always_had(monkeypatch):
    # 15 -> 1 runs backward: in the whole union it is a piece (15, 14) of the second step; a window
    # of that step alone would leave it out (it ends before the window starts)
    s, e = [np.array([2.0, 13.0, 15.0])], [np.array([3.0, 14.0, 1.0])]

    def blocks(chunk):
        return iter(list(zip(s, e, strict=True)))

    monkeypatch.setattr(step_windows, "WINDOW_SPANS", 1)
    starts, ends = np.array([0.0, 12.0]), np.array([12.0, 30.0])
    got = list(step_windows.per_step(blocks, starts, ends))
    assert [(a.tolist(), b.tolist()) for a, b in got] == [([2.0], [3.0]), ([13.0, 15.0], [14.0, 14.0])]
    assert [x.tolist() for x in step_windows.merged(blocks)] == [[2.0, 13.0, 15.0], [3.0, 14.0, 14.0]]


def test_a_span_from_before_a_window_reaching_just_into_it_is_seen_by_that_windows_step(monkeypatch):
    """Step 1's window starts at 10; the span [9, 10.5] began in step 0's window and still counts there."""
    monkeypatch.setattr(step_windows, "WINDOW_SPANS", 1)
    s, e = np.array([0.0, 9.0, 20.0]), np.array([5.0, 10.5, 25.0])
    starts, ends = np.array([0.0, 10.0, 20.0]), np.array([10.0, 20.0, 30.0])
    seen = [(list(a), list(b)) for a, b in step_windows.per_step(lambda chunk: iter([(s, e)]), starts, ends)]
    assert seen == [([0.0, 9.0], [5.0, 10.0]), ([10.0], [10.5]), ([20.0], [25.0])]


def _union_of(points: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Sorted disjoint spans (a union) from sorted distinct points taken in pairs."""
    p = np.unique(np.array(points, dtype=np.float64))
    p = p[: len(p) // 2 * 2]
    return p[0::2].copy(), p[1::2].copy()


_NEAR_BOUNDS = [float(np.nextafter(4.5 * k, side)) for k in range(1, 20) for side in (-np.inf, np.inf)]
"""Points a float away from a step's bound (bounds are multiples of 4.5): a midpoint there rounds onto
the bound, where only the step's own spans may cover it."""
_POINTS = st.lists(
    st.integers(0, 90).map(lambda i: i * 1.125) | st.sampled_from([0.5, 7.25, 13.125, 33.3, *_NEAR_BOUNDS]), max_size=24
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_POINTS, min_size=len(step_breakdown.ROLES) + 1, max_size=len(step_breakdown.ROLES) + 1),
    st.lists(st.integers(0, 12), min_size=1, max_size=6),
)
def test_steps_split_together_are_each_step_split_on_its_own(unions, gaps):
    """``_split_steps`` over consecutive steps (touching or not) against ``_split_step`` per step on
    ``within`` of the same unions: the same sums and waits, to the bit."""
    bounds = np.cumsum([0.0, *gaps, 5.0]) * 4.5  # steps back to back where a gap is 0
    lo, hi = bounds[:-1], bounds[1:]
    spans = [_union_of(points) for points in unions]
    roles, waits = spans[:-1], spans[-1]
    expected = [
        step_split.split_step(
            float(a), float(b), [step_windows.within(u, a, b) for u in roles], step_windows.within(waits, a, b)
        )
        for a, b in zip(lo, hi, strict=True)
    ]
    sums, wait = step_split.split_steps(
        lo, hi, [step_split.clipped(u, lo, hi) for u in roles], step_split.clipped(waits, lo, hi)
    )
    assert sums.tobytes() == np.array([s for s, _ in expected]).tobytes()
    assert wait.tobytes() == np.array([w for _, w in expected]).tobytes()


def _splits_step_by_step(d, g, calls, roles):
    """step_splits' sums and waits as they were computed before, one step at a time."""
    numbers, starts, ends = step_breakdown._tb_steps(d, g, calls, roles)
    tables = (d.ops, d.annotations)
    before = [*roles.unions, step_breakdown._cpu_spans(d, step_breakdown.COLLECTIVES, None, tables)]
    not_exec = re.compile(f"{STEP_RE.pattern}|{step_breakdown.DATALOADER_RE.pattern}")
    after = [
        step_breakdown._cpu_spans(d, step_breakdown.DATALOADER_RE, None, tables),
        step_breakdown._cpu_spans(d, None, not_exec, tables),
    ]
    inputs = step_breakdown._cpu_spans(
        d,
        re.compile(f"{step_breakdown.DATALOADER_RE.pattern}|{step_breakdown.DATA_ITERATOR_RE.pattern}"),
        None,
        (*tables, d.py),
    )
    out = {}
    for i, in_runtime in enumerate(step_windows.per_step(_runtime(d), starts, ends)):
        lo, hi = float(starts[i]), float(ends[i])
        mine = [
            *(step_windows.within(u, lo, hi) for u in before),
            in_runtime,
            *(step_windows.within(u, lo, hi) for u in after),
        ]
        sums, wait = step_split.split_step(lo, hi, mine, step_windows.within(inputs, lo, hi))
        out[numbers[i]] = (sums.tolist(), wait)
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name[:40])
def test_steps_split_a_few_at_a_time_are_each_split_on_its_own(path, monkeypatch):
    d, g, calls, roles, starts, ends = _read(path)
    if not d.steps:
        pytest.skip("no steps")
    expected = _splits_step_by_step(d, g, calls, roles)
    for at, spans_at, finite in (
        (1, 1 << 15, True),
        (3, 1 << 15, True),
        (64, 1 << 15, True),
        (64, 1, True),
        (64, 300, True),
        (3, 1 << 15, False),
    ):
        monkeypatch.setattr(step_split, "STEPS_AT", at)
        monkeypatch.setattr(step_split, "SPANS_AT", spans_at)
        if not finite:  # the per-step fallback for NaN or infinite times
            monkeypatch.setattr(step_breakdown, "finite", lambda *a: False)
        got = step_breakdown.step_splits(d, g, calls, roles)
        for n, (sums, wait) in expected.items():
            b = got[n].breakdown
            parts = [getattr(b, f"{r}_us") for r in step_breakdown.ROLES] + [b.other_us]
            assert np.array([*parts, got[n].input_wait_us]).tobytes() == np.array([*sums, wait]).tobytes(), (at, n)

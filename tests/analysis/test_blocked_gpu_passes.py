"""The passes over every GPU event that go a block at a time (issue 32: peak RSS of a 3 GB trace) give
what one pass over all of them gives, to the bit, on the real GPU traces: each is run with blocks of
1 and 7 events (or intervals) and compared with the same computation done whole."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.analyzers import (
    attribution,
    gpu_breakdown,
    idle,
    kernel_breakdown,
    overlap,
    per_step,
    queue,
    step_breakdown,
    step_detail,
)
from bridge_plugins.analysis.analyzers.step_breakdown import gpu_role_spans, role_union
from bridge_plugins.analysis.analyzers.step_windows import union as windows_union
from bridge_plugins.analysis.analyzers.threads import containing_top, top_level
from bridge_plugins.analysis.trace.collect import GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_OTHER, Collected
from bridge_plugins.analysis.trace.gpu_events import (
    KERNEL_TYPES,
    CpuCalls,
    GpuEvents,
    joined,
    kind_union,
    stream_codes,
    union,
)
from bridge_plugins.analysis.trace.split import collect_trace
from tests.analysis.gpu_traces import FIXTURES, JOBS

TRACES = [FIXTURES / f for files in JOBS.values() for f in files]
SOME_UNKEPT = FIXTURES.parent / "public-traces" / "negative_queue_length_values_check__rank0.json.gz"
"""A public trace with GPU events launched after its last step, which GpuEvents leaves out (872 of 7747)."""
SMALL = (1, 7)


@functools.cache
def _read(path: str) -> tuple[Collected, GpuEvents, CpuCalls, dict[str, np.ndarray]]:
    """The trace's collected state, its joined GPU events, and a copy of the collector's GPU columns."""
    d = collect_trace(Path(path), 1)
    cols = {
        "ts": np.frombuffer(d.gpu_ts, np.float64).copy(),
        "dur": np.frombuffer(d.gpu_dur, np.float64).copy(),
        "cat": np.frombuffer(d.gpu_cat, np.int8).copy(),
        "stream": np.frombuffer(d.gpu_stream, np.int64).copy(),
    }
    types = gpu_breakdown.kernel_types(d)
    g, calls = joined(d, gpu_breakdown.kept_gpu_events(d), types)
    return d, g, calls, cols


def _same(a: tuple[np.ndarray, ...], b: tuple[np.ndarray, ...]) -> bool:
    return len(a) == len(b) and all(
        x.dtype == y.dtype and x.tobytes() == y.tobytes() for x, y in zip(a, b, strict=True)
    )


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_kind_unions_a_block_at_a_time_are_the_whole_union(path):
    _, g, _, _ = _read(str(path))
    for code in range(len(KERNEL_TYPES)):
        whole = union(*g.spans(g.kind == code))
        assert all(_same(kind_union(g, code, n), whole) for n in SMALL)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_overlap_intersection_a_few_intervals_at_a_time_is_one_pass(path):
    _, g, _, _ = _read(str(path))
    comm, comp = (union(*g.spans(g.of_kind(k))) for k in ("communication", "computation"))
    one_pass = float(overlap._pieces(comm, comp).sum())
    assert one_pass > 0
    assert [overlap.intersection_length(comm, comp, n) for n in SMALL] == [one_pass, one_pass]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_gpu_breakdown_a_block_at_a_time_is_the_whole(path, monkeypatch):
    _, g, _, _ = _read(str(path))
    whole = gpu_breakdown._breakdown_whole(g, 5)
    for n in SMALL:
        monkeypatch.setattr(gpu_breakdown, "EVENTS_AT", n)
        assert gpu_breakdown.breakdown(g, 5) == whole


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_kernel_types_swept_a_window_at_a_time_are_one_sweep(path):
    _, g, _, _ = _read(str(path))
    unions = [kind_union(g, KERNEL_TYPES.index(k)) for k in kernel_breakdown.OVERLAP_BITS]
    bounds = kernel_breakdown._bounds(unions, -np.inf, np.inf)
    one_sweep = kernel_breakdown._rows(kernel_breakdown._sweep(bounds, kernel_breakdown._Sweep()))
    assert one_sweep
    assert [kernel_breakdown.by_type(g, n) for n in SMALL] == [one_sweep, one_sweep]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_role_union_a_block_at_a_time_is_the_whole_union(path):
    _, _, _, cols = _read(str(path))
    ts, dur = cols["ts"], cols["dur"]
    at = np.flatnonzero(cols["cat"] == GPU_KERNEL).astype(np.int32)
    whole = windows_union([ts[at]], [ts[at] + dur[at]])
    assert all(_same(role_union(ts, dur, at, n), whole) for n in SMALL)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_stream_codes_a_block_at_a_time_are_numpys_unique(path):
    _, g, _, cols = _read(str(path))
    from array import array

    column = array("q", cols["stream"].tobytes())
    streams, inverse = np.unique(cols["stream"][g.index], return_inverse=True)
    for n in SMALL:
        got_streams, codes = stream_codes(column, g.index, n)
        assert _same((got_streams,), (streams,)) and codes.tolist() == inverse.tolist()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_top_level_owners_a_few_moments_at_a_time_are_all_at_once(path):
    d, g, calls, _ = _read(str(path))
    li = g.launch[g.launch >= 0]
    thread = calls.thread[li]
    top = lambda key: top_level(d.ops, key) if key in d.ops else None  # noqa: E731
    whole = attribution._per_thread(d, thread, calls.ts, li, top, containing_top)
    assert (whole >= 0).any()
    for n in SMALL:
        assert attribution._per_thread(d, thread, calls.ts, li, top, containing_top, n).tolist() == whole.tolist()


# The analyzers' passes that take launch times, running sums and queue levels a block at a time, each
# against the code it replaced (kept here as the reference), on the real traces and on random input.

_TIMES = st.sampled_from([0.0, -0.0, 1.0, 2.0, 2.5, 3.0, float("nan"), float("inf"), -float("inf")])


def _idle_host_waits_whole(g: GpuEvents, calls: CpuCalls, m: np.ndarray) -> np.ndarray:
    """idle.py before: every launch time of the stream at once, then one comparison."""
    launch = g.launch[m]
    launch_ts = np.full(len(launch), np.nan)
    has = launch >= 0
    launch_ts[has] = calls.ts[launch[has]]
    return launch_ts[1:] > g.spans(m)[1][:-1]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_idle_host_waits_a_few_events_at_a_time_are_all_at_once(path):
    _, g, calls, _ = _read(str(path))
    real = g.cat != GPU_OTHER
    waits = 0
    for code in np.unique(g.stream[real]).tolist():
        m = real & (g.stream == code)
        whole = _idle_host_waits_whole(g, calls, m)
        waits += int(whole.sum())
        for n in SMALL:
            assert idle._host_waits(g, calls, m, g.spans(m)[1], n).tolist() == whole.tolist()
    assert waits > 0  # some gaps are the host's


def _gpu_within_whole(g: GpuEvents, calls: CpuCalls, windows: list[tuple[float, float]]) -> list[float]:
    """step_detail.py before: every launch time sorted, and the running sums of every duration."""
    has = g.launch >= 0
    launch_ts = calls.ts[g.launch[has]]
    order = np.argsort(launch_ts, kind="stable")
    launch_ts = launch_ts[order]
    before = np.concatenate([[0.0], np.cumsum(g.dur[has][order])])
    out = []
    for start, dur in windows:
        a, b = np.searchsorted(launch_ts, [start, start + dur])
        out.append(float(before[b] - before[a]))
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_gpu_time_launched_in_each_step_from_running_sums_a_block_at_a_time(path):
    d, g, calls, _ = _read(str(path))
    steps = [(d.step_ts[n], d.steps[n]) for n in sorted(d.steps) if n in d.step_ts]
    whole = _gpu_within_whole(g, calls, steps)
    assert len(steps) >= 2 and all(us > 0 for us in whole)
    for n in (*SMALL, 1 << 16):
        assert step_detail._gpu_launched_within(g, calls, steps, n) == whole


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(_TIMES, _TIMES), max_size=25), st.lists(st.tuples(_TIMES, _TIMES), max_size=4), st.integers(1, 4)
)
def test_gpu_time_within_windows_is_the_single_cumsums_on_random_times(events, windows, n):
    launch_ts = np.array([e[0] for e in events])
    dur = np.array([e[1] for e in events])
    k = len(events)
    codes, ids = np.zeros(k, np.int8), np.zeros(k, np.int32)
    g = GpuEvents(ids, np.zeros(k), dur, ids, codes, np.zeros(1, np.int64), codes, codes, np.arange(k, dtype=np.int32))
    calls = CpuCalls(launch_ts, np.zeros(k), ids, ids, k)
    with np.errstate(all="ignore"):  # as analyzers.all runs it: inf - inf is NaN, not a warning
        got = np.array(step_detail._gpu_launched_within(g, calls, windows, n))
        expected = np.array(_gpu_within_whole(g, calls, windows), dtype=np.float64)
    assert got.tobytes() == expected.tobytes()


def _levels_by_sort(launch_ts: np.ndarray, start_ts: np.ndarray) -> np.ndarray:
    """queue.py before: +1 and -1 sorted by (time, start) with np.lexsort, then np.cumsum."""
    n = len(start_ts)
    t = np.concatenate([launch_ts, start_ts])
    is_start = np.concatenate([np.zeros(n, np.int8), np.ones(n, np.int8)])
    level = np.where(np.lexsort((is_start, t)) < n, 1.0, -1.0)
    return np.cumsum(level, out=level)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(_TIMES, _TIMES), max_size=30), st.integers(1, 5))
def test_queue_levels_counted_are_the_sorted_changes_cumsum(pairs, n):
    launch_ts = np.array([p[0] for p in pairs])
    start_ts = np.sort(np.array([p[1] for p in pairs]), kind="stable")  # GpuEvents: sorted by start
    expected = _levels_by_sort(launch_ts.copy(), start_ts.copy())
    assert queue.levels(launch_ts, start_ts, n).astype(np.float64).tobytes() == expected.tobytes()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_queue_levels_counted_a_block_at_a_time_on_real_streams(path):
    _, g, calls, _ = _read(str(path))
    has = g.launch >= 0
    for code in np.unique(g.stream[has]).tolist():
        sm = has & (g.stream == code)
        expected = _levels_by_sort(calls.ts[g.launch[sm]], g.ts[sm])
        for n in (*SMALL, 1 << 16):
            got = queue.levels(calls.ts[g.launch[sm]], g.ts[sm], n).astype(np.float64)
            assert got.tobytes() == expected.tobytes()


def _owners_picked(names: list[str], ids: np.ndarray, dur: np.ndarray) -> list[attribution.Owner]:
    """attribution.py before: the owned moments picked out, then bincount."""
    ok = ids >= 0
    if not ok.any():
        return []
    owned = ids[ok]
    total, count = np.bincount(owned, weights=dur[ok]), np.bincount(owned)
    rows = [attribution.Owner(names[i], float(total[i]), int(count[i])) for i in np.flatnonzero(count).tolist()]
    return sorted(rows, key=lambda r: (-r.gpu_us, r.name))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 4), st.floats(allow_nan=False, width=64)), max_size=40))
def test_owners_with_the_ids_shifted_are_the_owned_ones_picked_out(moments):
    ids = np.array([m[0] for m in moments], dtype=np.int32)
    dur = np.array([m[1] for m in moments], dtype=np.float64)
    names = [f"op{i}" for i in range(5)]
    got, expected = attribution._owners(names, ids, dur), _owners_picked(names, ids, dur)
    assert [(o.name, o.gpu_events) for o in got] == [(o.name, o.gpu_events) for o in expected]
    assert np.array([o.gpu_us for o in got]).tobytes() == np.array([o.gpu_us for o in expected]).tobytes()


@pytest.mark.parametrize("path", [*TRACES, SOME_UNKEPT], ids=lambda p: p.name)
def test_the_last_gpu_end_before_a_time_from_kept_events_and_the_others_ends(path, monkeypatch):
    _, g, _, cols = _read(str(path))
    fresh = collect_trace(path, 1)  # gpu_role_spans reads the GPU columns joined took
    keep = gpu_breakdown.kept_gpu_events(fresh)
    device = cols["cat"] != GPU_OTHER
    every_end = np.sort(cols["ts"][device] + cols["dur"][device])  # step_breakdown before: all of them sorted
    roles = gpu_role_spans(fresh, keep)
    assert len(roles.unkept_ends) == int((device & ~keep).sum())
    assert len(roles.unkept_ends) == (872 if path == SOME_UNKEPT else 0)
    for t in [*np.quantile(every_end, [0, 0.1, 0.5, 0.9, 1]).tolist(), every_end[0] - 1, every_end[-1] + 1]:
        i = int(np.searchsorted(every_end, t)) - 1
        expected = float(every_end[i]) if i >= 0 else None
        for n in (*SMALL, 1 << 16):
            monkeypatch.setattr(step_breakdown, "EVENTS_AT", n)
            assert roles.last_end_before(g, t) == expected


@pytest.mark.parametrize("unkept, expected", [((), 3.0), ((3.2,), 3.2), ((4.0, 1.0), 3.0)])
def test_the_last_gpu_end_before_a_time_is_a_kernels_memcpys_or_memsets_not_a_sync_markers(
    unkept, expected, monkeypatch
):
    k = 4  # a kernel ending at 5 and a memset at 3 (before t = 4), a sync marker at 3.5, a memcpy at 4
    g = GpuEvents(
        np.arange(k, dtype=np.int32),
        np.array([0.0, 1.0, 2.0, 3.0]),
        np.array([5.0, 2.5, 1.0, 1.0]),
        np.zeros(k, np.int32),
        np.zeros(k, np.int8),
        np.zeros(1, np.int64),
        np.array([GPU_KERNEL, GPU_OTHER, GPU_MEMSET, GPU_MEMCPY], np.int8),
        np.zeros(k, np.int8),
        np.zeros(k, np.int32),
    )
    roles = step_breakdown.GpuRoles([], np.array(unkept, dtype=np.float64))
    for n in SMALL:
        monkeypatch.setattr(step_breakdown, "EVENTS_AT", n)
        assert roles.last_end_before(g, 4.0) == expected
        assert roles.last_end_before(g, 0.5) is None


def _idle_shares_by_masks(d: Collected, g: GpuEvents, calls: CpuCalls) -> dict[int, float | None]:
    """per_step.py before: a mask over every GPU event per step."""
    launched = np.where(g.launch >= 0, calls.ts[np.maximum(g.launch, 0)], np.nan)
    out: dict[int, float | None] = dict.fromkeys(sorted(d.steps))
    for n in sorted(d.steps):
        start = d.step_ts[n]
        mine = (launched >= start) & (launched < start + d.steps[n])
        if mine.any():
            s, e = g.ts[mine], g.end[mine]
            base = s.min()
            window = float(e.max() - base)
            if window > 0:
                out[n] = 1.0 - gpu_breakdown._union_length(s - base, e - base) / window
    return out


@pytest.mark.parametrize("path", [*TRACES, SOME_UNKEPT], ids=lambda p: p.name)
def test_each_steps_gpu_idle_share_from_a_search_is_the_mask_over_every_event(path):
    d, g, calls, _ = _read(str(path))
    fresh = collect_trace(path, 1)
    rows = per_step.per_step(
        fresh, g, calls, step_breakdown.gpu_role_spans(fresh, gpu_breakdown.kept_gpu_events(fresh))
    )
    expected = _idle_shares_by_masks(d, g, calls)
    assert sum(v is not None for v in expected.values()) >= 2
    assert {r.step: r.gpu_idle_share for r in rows} == expected

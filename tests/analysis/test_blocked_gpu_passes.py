"""The passes over every GPU event that go a block at a time (issue 32: peak RSS of a 3 GB trace) give
what one pass over all of them gives, to the bit, on the real GPU traces: each is run with blocks of
1 and 7 events (or intervals) and compared with the same computation done whole."""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest

from bridge_plugins.analysis.analyzers import attribution, gpu_breakdown, kernel_breakdown, overlap
from bridge_plugins.analysis.analyzers.step_breakdown import role_union
from bridge_plugins.analysis.analyzers.step_windows import union as windows_union
from bridge_plugins.analysis.analyzers.threads import containing_top, top_level
from bridge_plugins.analysis.trace.collect import GPU_KERNEL, Collected
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
SMALL = (1, 7)


@functools.cache
def _read(name: str) -> tuple[Collected, GpuEvents, CpuCalls, dict[str, np.ndarray]]:
    """The trace's collected state, its joined GPU events, and a copy of the collector's GPU columns."""
    os.environ.setdefault("BRIDGE_PLUGINS_SPLIT", "never")
    d = collect_trace(FIXTURES / name, 1)
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
    _, g, _, _ = _read(path.name)
    for code in range(len(KERNEL_TYPES)):
        whole = union(*g.spans(g.kind == code))
        assert all(_same(kind_union(g, code, n), whole) for n in SMALL)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_overlap_intersection_a_few_intervals_at_a_time_is_one_pass(path):
    _, g, _, _ = _read(path.name)
    comm, comp = (union(*g.spans(g.of_kind(k))) for k in ("communication", "computation"))
    one_pass = float(overlap._pieces(comm, comp).sum())
    assert one_pass > 0
    assert [overlap.intersection_length(comm, comp, n) for n in SMALL] == [one_pass, one_pass]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_gpu_breakdown_a_block_at_a_time_is_the_whole(path, monkeypatch):
    _, g, _, _ = _read(path.name)
    whole = gpu_breakdown._breakdown_whole(g, 5)
    for n in SMALL:
        monkeypatch.setattr(gpu_breakdown, "EVENTS_AT", n)
        assert gpu_breakdown.breakdown(g, 5) == whole


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_kernel_types_swept_a_window_at_a_time_are_one_sweep(path):
    _, g, _, _ = _read(path.name)
    unions = [kind_union(g, KERNEL_TYPES.index(k)) for k in kernel_breakdown.OVERLAP_BITS]
    bounds = kernel_breakdown._bounds(unions, -np.inf, np.inf)
    one_sweep = kernel_breakdown._rows(kernel_breakdown._sweep(bounds, kernel_breakdown._Sweep()))
    assert one_sweep
    assert [kernel_breakdown.by_type(g, n) for n in SMALL] == [one_sweep, one_sweep]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_role_union_a_block_at_a_time_is_the_whole_union(path):
    _, _, _, cols = _read(path.name)
    ts, dur = cols["ts"], cols["dur"]
    at = np.flatnonzero(cols["cat"] == GPU_KERNEL).astype(np.int32)
    whole = windows_union([ts[at]], [ts[at] + dur[at]])
    assert all(_same(role_union(ts, dur, at, n), whole) for n in SMALL)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_stream_codes_a_block_at_a_time_are_numpys_unique(path):
    _, g, _, cols = _read(path.name)
    from array import array

    column = array("q", cols["stream"].tobytes())
    streams, inverse = np.unique(cols["stream"][g.index], return_inverse=True)
    for n in SMALL:
        got_streams, codes = stream_codes(column, g.index, n)
        assert _same((got_streams,), (streams,)) and codes.tolist() == inverse.tolist()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_top_level_owners_a_few_moments_at_a_time_are_all_at_once(path):
    d, g, calls, _ = _read(path.name)
    li = g.launch[g.launch >= 0]
    thread, t = calls.thread[li], calls.ts[li]
    top = lambda key: top_level(d.ops, key) if key in d.ops else None  # noqa: E731
    whole = attribution._per_thread(d, thread, t, top, containing_top)
    assert (whole >= 0).any()
    for n in SMALL:
        assert attribution._per_thread(d, thread, t, top, containing_top, n).tolist() == whole.tolist()

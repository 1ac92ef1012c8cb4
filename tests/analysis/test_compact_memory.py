"""Memory that does not grow with the trace (issue 18): what a 3 GB trace showed, seen on small real ones.

At 3 GB (1.3 M GPU events, 3 M launch calls, 2.5 M operators a thread) ``summary`` peaked at 476 MB:
the GPU columns held twice (the collector's and a 69-byte-an-event GpuEvents), every launch call
whole, and each thread's operators read whole by each analysis. Here: the GPU events once, in a few
bytes each; only the launch calls something was joined to; and with the spill threshold at 7
elements, so that every column is many blocks, no pass reads a thread's or the calls' columns whole,
and the figures are the same to the last bit.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from bridge_plugins.analysis.analyzers import gpu_breakdown, kernel_breakdown
from bridge_plugins.analysis.analyzers.op_tables import _thread_sums, _thread_sums_by_block
from bridge_plugins.analysis.analyzers.threads import columns, covered, overlapping, top_level
from bridge_plugins.analysis.jsonable import dumps
from bridge_plugins.analysis.pipeline import summarize_trace
from bridge_plugins.analysis.trace import collect, split
from bridge_plugins.analysis.trace.collect import Collected, Collector, Record
from bridge_plugins.analysis.trace.gpu_events import joined, sorted_distinct, union
from bridge_plugins.analysis.trace.nesting import blocks_in_nesting_order
from bridge_plugins.analysis.trace.reader import read_trace
from bridge_plugins.analysis.trace.spill import Spill, ThreadColumns
from tests.analysis.gpu_traces import FIXTURES

TRACES = sorted(FIXTURES.glob("*.json.gz"))


def _collected(path: Path) -> Collected:
    c = Collector()
    read_trace(path, c.on_header, c.on_event, Record, c.on_records)
    return c.data


def test_gpu_events_are_compact_and_held_once():
    d = _collected(FIXTURES / "job2_rank0.json.gz")  # 3,774 GPU events, 8,740 calls with a correlation
    n = d.gpu_count
    keep = gpu_breakdown.kept_gpu_events(d)
    g, calls = joined(d, keep, gpu_breakdown.kernel_types(d))
    assert n == len(keep) > 1000 and 0 < len(g.ts) <= n
    # the collector's GPU columns went into g: not a second copy of them
    taken = ("gpu_ts", "gpu_dur", "gpu_name", "gpu_corr", "gpu_stream", "gpu_cat")
    assert [len(getattr(d, f)) for f in taken] == [0] * 6
    held = sum(a.nbytes for a in (g.index, g.ts, g.dur, g.name, g.stream, g.cat, g.kind, g.launch))
    assert held / len(g.ts) <= 31  # 69 bytes an event before (int64 index/corr/stream, an object per kind)
    # only the calls a GPU event was joined to, each once
    assert len(calls.ts) == len(np.unique(g.launch[g.launch >= 0])) < calls.count == d.cpu_call_count()
    assert np.array_equal(np.unique(g.launch[g.launch >= 0]), np.arange(len(calls.ts)))


@pytest.mark.parametrize("path", TRACES, ids=[p.name for p in TRACES])
def test_passes_by_block_give_the_same_figures_without_reading_a_column_whole(path, monkeypatch):
    whole = dumps(summarize_trace(path))
    monkeypatch.setattr(collect, "SPILL_AT", 7)
    monkeypatch.setattr(kernel_breakdown, "_CHUNK", 7)  # the by-type sweep in chunks too
    read = split.read_trace

    def in_small_chunks(
        path, on_header, on_event, record, on_records, on_chunk=None
    ):  # as a big file's chunks arrive (records: not the native reader)
        return read(
            path, on_header, on_event, record, lambda r: [on_records(r[i : i + 7]) for i in range(0, len(r), 7)]
        )

    monkeypatch.setattr(split, "read_trace", in_small_chunks)

    def refused(*args, **kwargs):
        raise AssertionError("a whole column read")

    # operators in nesting order (Kineto's) and launch calls: never read whole, only a block at a time
    monkeypatch.setattr(ThreadColumns, "__getitem__", refused)
    monkeypatch.setattr(Spill, "read", refused)
    monkeypatch.setattr(Collected, "cpu_calls", refused)
    blocks: list[int] = []
    spill_blocks = Spill.blocks

    def counted(self, tail, which=None):
        blocks.append(len(self._blocks))
        return spill_blocks(self, tail, which)

    monkeypatch.setattr(Spill, "blocks", counted)
    assert dumps(summarize_trace(path)) == whole
    assert max(blocks) > 100  # the big columns went over in many blocks


def _random_thread(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(ts, dur) of a thread's events in nesting order: nested, siblings, partial overlaps, ties,
    and one event open across most of the thread now and then."""
    ts = np.sort(rng.integers(0, 4 * n, n).astype(float) + rng.choice([0.0, 0.25], n))
    dur = rng.choice([0.0, 1.0, 3.0, 7.5, 40.0, 4.0 * n], n, p=[0.1, 0.3, 0.3, 0.2, 0.09, 0.01])
    order = np.lexsort((-dur, ts))
    return ts[order], dur[order]


def test_thread_passes_by_block_match_the_whole_thread():
    """Random threads cut into random blocks: the same sums, tops, union and window as read whole."""
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 300))
        ts, dur = _random_thread(rng, n)
        ids = rng.integers(0, 5, n).astype(np.int32)
        shuffled = n > 1 and rng.random() < 0.3  # out of nesting order: read whole and sorted instead
        if shuffled:
            i, j = rng.choice(n, 2, replace=False)
            ts[[i, j]], dur[[i, j]] = ts[[j, i]], dur[[j, i]]
        table = ThreadColumns()
        tail = table.tail(("p", "t"))
        for i in range(n):
            for column, value in zip(tail, (ts[i], dur[i], ids[i]), strict=True):
                column.append(value)
            if rng.random() < 0.1:
                table.spill(("p", "t"))
        if not shuffled:
            whole = _thread_sums(5, ts, dur, ids)
            by_block = _thread_sums_by_block(5, table.blocks(("p", "t")))
            assert [a.tobytes() for a in by_block] == [a.tobytes() for a in whole]
        starts, ends, names = columns((ts, dur, ids))
        top = np.ones(n, dtype=bool)  # outermost's: starts at or after every earlier end
        top[1:] = starts[1:] >= np.maximum.accumulate(ends)[:-1]
        assert [a.tolist() for a in top_level(table, ("p", "t"))] == [
            starts[top].tolist(),
            ends[top].tolist(),
            names[top].tolist(),
        ]
        assert [a.tolist() for a in covered(table, ("p", "t"))] == [a.tolist() for a in union(starts, ends)]
        lo, hi = sorted(rng.uniform(0, 4 * n, 2).tolist())
        m = (ends > lo) & (starts < hi)
        assert [a.tolist() for a in overlapping(table, ("p", "t"), lo, hi)] == [
            starts[m].tolist(),
            ends[m].tolist(),
            names[m].tolist(),
        ]


def test_nesting_order_is_checked_across_blocks():
    def block(ts: list[float], dur: list[float]) -> list[np.ndarray]:
        return [np.array(ts), np.array(dur)]

    assert blocks_in_nesting_order([block([0, 10], [20, 1]), block([], []), block([12], [1])])
    assert not blocks_in_nesting_order([block([0, 10], [20, 1]), block([5], [1])])  # before the last one's start
    assert not blocks_in_nesting_order([block([0], [1]), block([0], [2])])  # a tie: the longer one comes first
    assert not blocks_in_nesting_order([block([0], [1]), block([-np.inf], [np.inf])])  # an end that is NaN


@given(st.lists(st.integers(-3, 3) | st.integers(-(2**63), 2**63 - 1), max_size=200))
def test_sorted_distinct_is_numpys_unique(values):
    """The sort-based distinct values the launch join uses (numpy 2's hashing unique is 30x slower there).
    Small values make repeats and neighbours (a test with only int64-wide values missed a planted
    bug that dropped neighbours); wide ones reach int64's ends."""
    a = np.array(values, dtype=np.int64)
    assert np.array_equal(sorted_distinct(a), np.unique(a))


def test_joining_unsorted_gpu_events_peaks_a_few_bytes_an_event_above_what_it_keeps():
    """The sort of the kept GPU events by start permutes one column at a time, the index as int32
    from the start: 34 bytes an event at the peak (40 when the index and the start times were both
    permuted at once, an int64 index: the 3 GB trace's peak RSS, 244-251 MB, was there). 1 M events
    in reverse order, so that every column is permuted."""
    import tracemalloc

    n = 1 << 20
    d = Collected()
    d.gpu_ts.frombytes(np.arange(n, 0, -1, dtype=np.float64).tobytes())
    d.gpu_dur.frombytes(np.ones(n).tobytes())
    d.gpu_name.frombytes(np.zeros(n, np.int32).tobytes())
    d.gpu_corr.frombytes(np.arange(n, dtype=np.int64).tobytes())
    d.gpu_stream.frombytes(np.full(n, 7, np.int64).tobytes())
    d.gpu_cat.frombytes(np.zeros(n, np.int8).tobytes())
    d.gpu_count = n
    d.names.append("sm80_xmma_gemm")
    types = gpu_breakdown.kernel_types(d)
    tracemalloc.start()
    try:
        g, _ = joined(d, np.ones(n, dtype=bool), types)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert np.array_equal(g.ts, np.arange(1, n + 1, dtype=np.float64)) and g.index[0] == n - 1
    assert held / n < 32 and peak / n <= 36, (held / n, peak / n)

"""The collector gathers the same state however the events are cut into chunks.

``Collector.on_records`` reuses the last event's thread and table lists within a chunk (a cache
that a chunk of one event never hits), so chunks of one event are the plain reference: any cut
of the same events must give the same columns, names, threads and steps. Hypothesis draws events
from small pools (weighted by repeats), so that threads repeat, interleave, and compare equal across types (1, 1.0 and
True are one dict key), and names and categories cover every branch of the loop.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.trace import collect
from bridge_plugins.analysis.trace.collect import Args, Collector, Event, event_from_dict
from tests.analysis.collected_state import state

# pids and tids: a few common values (1, 1.0 and True are one key) and, rarely, odd ones
IDS = st.one_of(st.sampled_from([1, 2, 1.0, True, "1"]), st.sampled_from([None, 0, -(2**70), float("nan")]))
CATS = st.sampled_from(
    ["cpu_op", "cpu_op", "python_function", "python_function", "user_annotation", "user_annotation"]
    + ["cuda_runtime", "kernel", "gpu_memcpy"]
    + ["gpu_memset", "Trace", "ac2g", None]
)
NAMES = st.sampled_from(["aten::mm", "k", "cudaLaunchKernel", "ProfilerStep#3", "ProfilerStep#4", "Event Sync", ""])
TIMES = st.sampled_from([0.0, 1.5, 2.0, 1e6, 3.25, 7.0, 9.5, 11.0, 12.5, float("nan")])  # NaN: 1 in 10
CORRS = st.sampled_from([-1, 0, 7, 8, 2**63, 2**63 - 1])
STREAMS = st.sampled_from([-1, -1, -1, 0, 7, 2**64])


@st.composite
def events(draw) -> Event | dict:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([{"ph": "f", "id": 1}, {"ph": "X", "cat": 3, "name": 4, "ts": 1, "dur": 1}]))
    args = Args(draw(STREAMS), draw(CORRS), 1.0, 2.0)
    return Event(draw(CATS), draw(NAMES), draw(IDS), draw(IDS), draw(TIMES), draw(TIMES), args)


def fed(records: list, cuts: list[int]) -> Collector:
    c = Collector()
    at = 0
    for cut in [*sorted(cuts), len(records)]:
        c.on_records(records[at:cut])
        at = cut
    return c


def _op(cat: str, pid: object, tid: object, corr: int = -1) -> Event:
    return Event(cat, "op", pid, tid, 1.0, 2.0, Args(-1, corr))


@settings(max_examples=500, deadline=None)
# the cases the reuse of the last thread must tell apart, always tried: another pid on the same tid,
# another table on the same thread, and both for launch calls
@example([_op("cpu_op", 1, 5), _op("cpu_op", 2, 5)], [])
@example([_op("cpu_op", 1, 5), _op("python_function", 1, 5), _op("cpu_op", 1, 5)], [])
@example([_op("cuda_runtime", 1, 5, 7), _op("cuda_runtime", 2, 5, 8), _op("cuda_runtime", 1, 6, 9)], [])
@given(st.lists(events(), max_size=60), st.lists(st.integers(0, 60), max_size=6))
def test_any_cut_into_chunks_collects_what_one_event_at_a_time_does(raw, cuts):
    records = [event_from_dict(e) if isinstance(e, dict) else e for e in raw]
    one_by_one = fed(records, list(range(len(records))))
    assert state(fed(records, [min(c, len(records)) for c in cuts])) == state(one_by_one)


def test_threads_past_the_limit_share_one_entry_within_a_chunk(monkeypatch):
    """The last-thread reuse must not hand a thread past MAX_THREADS an index of its own."""
    monkeypatch.setattr(collect, "MAX_THREADS", 2)
    records = [Event("cpu_op", "op", 1, tid, 0.0, 1.0) for tid in (1, 2, 3, 3, 4, 1)]
    records += [Event("cuda_runtime", "cudaLaunchKernel", 1, tid, 0.0, 1.0, Args(-1, 5)) for tid in (3, 4, 2)]
    c = Collector()
    c.on_records(records)
    assert c.data.threads == [(1, 1), (1, 2), ("(other threads)", "(other threads)")]
    assert c.data.cpu_corr_thread.tolist() == [2, 2, 1]
    assert [k for k in c.data.ops] == [(1, 1), (1, 2), ("(other threads)", "(other threads)")]
    assert c.data.ops[("(other threads)", "(other threads)")][0].tolist() == [0.0, 0.0, 0.0]


@settings(max_examples=300, deadline=None)
@given(st.lists(events(), max_size=60), st.lists(st.integers(0, 60), max_size=6), st.integers(1, 4))
def test_past_the_name_cap_any_cut_collects_what_one_event_at_a_time_does(raw, cuts, cap):
    """Names capped at 1-4: the shared entries ("(other operators)", one per kernel type) are made
    when first needed and reused however the events are cut (the loop keeps the CPU one at hand)."""
    records = [event_from_dict(e) if isinstance(e, dict) else e for e in raw]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(collect, "MAX_NAMES", cap)
        one_by_one = fed(records, list(range(len(records))))
        cut = fed(records, [min(c, len(records)) for c in cuts])
        assert state(cut) == state(one_by_one)
        assert cut.data.name_types == one_by_one.data.name_types


def test_past_the_name_cap_a_new_operator_name_costs_no_call(monkeypatch):
    """A trace of 10^6 distinct names spent half its time past the cap in a call per event
    (issue 19): once "(other operators)" exists, an unknown CPU name is looked up, not registered."""
    monkeypatch.setattr(collect, "MAX_NAMES", 2)
    calls: list[str] = []
    real = Collector._id

    def counted(self, name, gpu):
        calls.append(name)
        return real(self, name, gpu)

    monkeypatch.setattr(Collector, "_id", counted)
    names = [f"op_{i}" for i in range(1000)]
    records = [Event(cat, n, 1, 1, 0.0, 1.0) for n in names for cat in ("cpu_op", "python_function")]
    records += [Event("cuda_runtime", n, 1, 1, 0.0, 1.0, Args(-1, 5)) for n in names]
    c = Collector()
    c.on_records(records)
    assert c.data.names == ["op_0", "op_1", "(other operators): past 2 distinct names"]
    assert calls == ["op_0", "op_1", "op_2"]
    assert c.data.ops[(1, 1)][2].tolist() == [0, 1] + [2] * 998
    assert c.data.py[(1, 1)][2].tolist() == [0, 1] + [2] * 998
    assert c.data.cpu_corr_name.tolist() == [0, 1] + [2] * 998
    calls.clear()
    launches = Collector()  # launch calls alone: their path keeps the entry at hand too
    launches.on_records(records[2000:])
    assert calls == ["op_0", "op_1", "op_2"]


NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(2**53), 2**53),
    st.sampled_from([0.0, -0.0, float("nan"), 2**63 - 1, -(2**63), 2**31 - 1, -(2**31), 127, -128]),
)


@given(st.sampled_from("dqib"), st.lists(NUMBERS, max_size=40))
@settings(max_examples=400, deadline=None)
@example("d", [-0.0, float("nan"), float("inf"), 2**63 - 1])
def test_extend_writes_the_bytes_fromlist_writes(typecode, values):
    from array import array

    expected = array(typecode)
    try:
        expected.fromlist(values)
    except (TypeError, OverflowError):
        return  # a value the column's type cannot hold: the collector never hands such a one
    column = array(typecode, [1] if typecode != "d" else [1.5])
    collect._extend(column, values)
    assert column.tobytes() == array(typecode, [1] if typecode != "d" else [1.5]).tobytes() + expected.tobytes()

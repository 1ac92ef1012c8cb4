"""The collector's rules, each on a few hand-written events with the columns they must give.

``test_collect_chunks.py`` checks that any cut of the events gathers the same state, which a rule
changed in every chunk alike would pass; the real traces (``test_summary_pinned.py``) have no
correlation 0, no stream 0, no old-format spans. Here each rule is stated: which events are GPU
events, which thread an event is on, the old format's annotations, the step table, the shared
names past the cap (docs/analysis-schema.md, docs/limits.md). Killed mutants: docs/reliability.md.
"""

from __future__ import annotations

import pytest

from bridge_plugins.analysis.trace import collect
from bridge_plugins.analysis.trace.collect import Args, Collector, Event
from bridge_plugins.analysis.trace.kernel_types import kernel_type


def collected(*records) -> collect.Collected:
    c = Collector()
    c.on_records(list(records))
    return c.data


def kernel(name="k", corr=5, stream=7, ts=10.0, dur=2.0, cat="kernel") -> Event:
    return Event(cat, name, 0, stream, ts, dur, Args(stream, corr))


def test_a_header_that_is_not_an_object_is_read_as_an_empty_one():
    c = Collector()
    assert c.data.header == {}
    c.on_header([1, 2])
    assert c.data.header == {}
    c.on_header({"schemaVersion": 1})
    assert c.data.header == {"schemaVersion": 1}


def test_correlation_0_and_stream_0_are_a_gpu_event():
    d = collected(kernel(corr=0, stream=0), kernel(corr=1, stream=1))
    assert d.gpu_count == 2
    assert (d.gpu_corr.tolist(), d.gpu_stream.tolist()) == ([0, 1], [0, 1])


def test_a_trace_span_is_never_a_gpu_event_nor_a_launch():
    d = collected(kernel(cat="Trace"), Event("Trace", "PyTorch Profiler (0)", 1, 1, 0.0, 9.0, Args(-1, 3)))
    assert (d.gpu_count, len(d.cpu_corr), d.threads) == (0, 0, [])


def test_a_stream_past_int64_is_clamped_and_a_correlation_past_it_dropped():
    d = collected(kernel(stream=2**63), kernel(stream=2**64), kernel(corr=2**63), kernel(stream=2**63 - 1))
    assert d.gpu_stream.tolist() == [2**63 - 1, 2**63 - 1, 2**63 - 1]


def test_the_first_launch_of_a_chunk_on_thread_none_none_is_registered():
    d = collected(Event("cuda_runtime", "cudaLaunchKernel", None, None, 1.0, 2.0, Args(-1, 5)))
    assert (d.threads, d.cpu_corr_thread.tolist(), d.cpu_corr.tolist()) == ([(None, None)], [0], [5])
    assert list(d.runtime) == [(None, None)]


def test_a_gpu_event_kind_and_its_memory_figures():
    copy = Event("gpu_memcpy", "Memcpy HtoD", 0, 7, 1.0, 2.0, Args(7, 4, 1024.0, 3.5))
    d = collected(kernel(), copy, kernel(cat="gpu_memset"), kernel(cat="gpu_user_annotation"))
    assert d.gpu_cat.tolist() == [collect.GPU_KERNEL, collect.GPU_MEMCPY, collect.GPU_MEMSET, collect.GPU_OTHER]
    assert (d.mem_index.tolist(), d.mem_bytes.tolist()[0], d.mem_bw.tolist()[0]) == ([1, 2], 1024.0, 3.5)


def test_old_format_torch_spans_are_annotations_and_other_operators_stay_operators():
    d = collected(
        Event("Operator", "ProfilerStep#3", 1, 1, 0.0, 10.0),
        Event("Operator", "aten::mm", 1, 1, 1.0, 2.0),
        Event("cpu_op", "ProfilerStep#4", 1, 1, 20.0, 10.0),  # today's format: an operator by that name
        Event("operator", "Optimizer.step#SGD.step", 1, 1, 5.0, 1.0),
    )
    assert d.steps == {3: 10.0}
    names = d.names
    assert [names[i] for i in d.annotations[(1, 1)][2]] == ["ProfilerStep#3", "Optimizer.step#SGD.step"]
    assert [names[i] for i in d.ops[(1, 1)][2]] == ["aten::mm", "ProfilerStep#4"]


def test_steps_come_from_annotations_whose_name_is_exactly_a_step():
    d = collected(
        Event("user_annotation", "ProfilerStep#7", 1, 1, 0.0, 5.0),
        Event("user_annotation", "ProfilerStep#7", 1, 1, 50.0, 5.0),  # as long: the later one
        Event("user_annotation", "ProfilerStep#7", 1, 1, 90.0, 4.0),  # shorter: kept out
        Event("user_annotation", "ProfilerStep#8", 1, 1, 100.0, 0.5),
        Event("user_annotation", "ProfilerStep#9", 1, 1, 200.0, 0.0),
        Event("user_annotation", "ProfilerStep#x", 1, 1, 300.0, 9.0),
        Event("user_annotation", "my ProfilerStep#10", 1, 1, 400.0, 9.0),
    )
    assert d.steps == {7: 5.0, 8: 0.5, 9: 0.0}
    assert d.step_ts == {7: 50.0, 8: 100.0, 9: 200.0}
    assert d.last_profiler_step_end == 409.0
    assert d.profiler_step_names == {"ProfilerStep#7", "ProfilerStep#8"}  # two are all gpu_breakdown asks


def test_past_the_step_cap_only_known_steps_grow(monkeypatch):
    monkeypatch.setattr(collect, "MAX_STEPS", 2)
    d = collected(
        *(Event("user_annotation", f"ProfilerStep#{n}", 1, 1, 10.0 * n, 1.0) for n in (1, 2, 3)),
        Event("user_annotation", "ProfilerStep#1", 1, 1, 100.0, 3.0),
    )
    assert (d.steps, d.step_ts) == ({1: 3.0, 2: 1.0}, {1: 100.0, 2: 20.0})


def test_past_the_name_cap_kernels_share_one_entry_per_kernel_type(monkeypatch):
    monkeypatch.setattr(collect, "MAX_NAMES", 1)
    gemms = ["ampere_sgemm_128x64_nn", "volta_sgemm_64x64_nn"]
    d = collected(
        kernel("first"),
        *(kernel(n) for n in gemms),
        kernel("ncclKernel_AllReduce"),
        Event("cpu_op", "aten::mm", 1, 1, 0.0, 1.0),
    )
    kind = kernel_type(gemms[0])
    assert kind != kernel_type("ncclKernel_AllReduce") and kind == kernel_type(gemms[1])
    assert d.names == [
        "first",
        f"(other {kind} kernels): past 1 distinct names",
        f"(other {kernel_type('ncclKernel_AllReduce')} kernels): past 1 distinct names",
        "(other operators): past 1 distinct names",
    ]
    assert d.gpu_name.tolist() == [0, 1, 1, 2]
    assert d.name_types == {1: kind, 2: kernel_type("ncclKernel_AllReduce")}


def test_past_the_name_cap_a_new_chunk_looks_names_up_without_a_call(monkeypatch):
    """The shared operator entry is at hand from the start of every chunk, not only the one that made it."""
    monkeypatch.setattr(collect, "MAX_NAMES", 1)
    c = Collector()
    c.on_records([Event("cpu_op", n, 1, 1, 0.0, 1.0) for n in ("a", "b")])
    calls: list[str] = []
    real = Collector._id
    monkeypatch.setattr(Collector, "_id", lambda self, name, gpu: calls.append(name) or real(self, name, gpu))
    c.on_records([Event("cpu_op", n, 1, 1, 0.0, 1.0) for n in ("c", "d")])
    assert calls == []
    assert c.data.ops[(1, 1)][2].tolist() == [0, 1, 1, 1]


@pytest.mark.parametrize("nan_field", ["ts", "dur"])
def test_an_event_with_a_nan_time_or_no_category_is_dropped(nan_field):
    times = {"ts": 1.0, "dur": 2.0, nan_field: float("nan")}
    d = collected(
        Event("cpu_op", "a", 1, 1, times["ts"], times["dur"]),
        Event(None, "b", 1, 1, 1.0, 2.0, Args(7, 5)),
        kernel(ts=times["ts"], dur=times["dur"]),
    )
    assert (d.gpu_count, list(d.ops), d.names) == (0, [], [])

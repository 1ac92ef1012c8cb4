"""The GPU breakdown's definitions on a hand-made trace whose answer is known to the microsecond."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from bridge_plugins.analysis.figures import GpuBreakdown
from bridge_plugins.analysis.pipeline import summarize


def kernel(name, ts, dur, corr, stream=7, cat="kernel"):
    return {
        "ph": "X",
        "cat": cat,
        "name": name,
        "pid": 0,
        "tid": stream,
        "ts": ts,
        "dur": dur,
        "args": {"stream": stream, "correlation": corr, "device": 0},
    }


def launch(ts, corr):
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 1,
        "tid": 1,
        "ts": ts,
        "dur": 1,
        "args": {"correlation": corr},
    }


def step(n, ts, dur):
    return {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1, "ts": ts, "dur": dur}


def write(tmp_path, events):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": events}))
    return p


def test_overlapping_streams_split_into_computation_communication_memory_idle(tmp_path):
    events = [
        step(1, 1000, 20),
        step(2, 1020, 20),
        launch(1001, 1),
        launch(1002, 2),
        launch(1003, 3),
        launch(1021, 4),
        launch(1022, 5),
        kernel("gemm", 1100, 10, 1),  # computation [0, 10)
        kernel("ncclDevKernel_AllReduce_Sum", 1105, 15, 2, stream=9),  # communication [5, 20), half hidden
        kernel("Memcpy DtoH (Device -> Pageable)", 1118, 7, 3, cat="gpu_memcpy"),  # memory [18, 25)
        kernel("gemm", 1130, 10, 4),  # computation [30, 40)
        kernel("cudaStreamSync", 1131, 2, 5),  # "other": not computation
        kernel("gemm", 1200, 50, 99),  # no CPU launch: dropped
        kernel("gemm", 1300, 50, 6),  # launched after the last step: dropped
        launch(1045, 6),
    ]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert t.gpu == GpuBreakdown(
        span_us=40.0,
        computation_us=20.0,
        communication_us=10.0,
        memory_us=5.0,
        idle_us=5.0,
        communication_total_us=15.0,
        gpu_events=5,
        gpu_events_dropped=2,
    )
    types = {r.name: (r.type, r.calls, r.total_us) for r in t.top_gpu_kernels}
    assert types == {
        "gemm": ("computation", 2, 20.0),
        "ncclDevKernel_AllReduce_Sum": ("communication", 1, 15.0),
        "Memcpy DtoH (Device -> Pageable)": ("memory", 1, 7.0),
        "cudaStreamSync": ("other", 1, 2.0),
    }
    assert t.steps.captured == [1, 2] and t.steps.median_us == 20.0


def test_one_step_keeps_every_gpu_event_as_hta_does(tmp_path):
    events = [step(1, 1000, 20), launch(1001, 1), kernel("gemm", 1100, 10, 1), kernel("gemm", 1200, 10, 99)]
    (t,) = summarize([write(tmp_path, events)]).traces
    assert t.gpu.gpu_events == 2 and t.gpu.span_us == 110.0 and t.gpu.idle_us == 90.0


def test_self_time_subtracts_nested_operators_on_the_same_thread(tmp_path):
    def op(name, ts, dur, tid=1):
        return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": dur}

    events = [
        op("outer", 0, 100),
        op("inner", 10, 30),
        op("leaf", 15, 5),
        op("inner", 50, 20),
        op("outer", 0, 50, tid=2),
    ]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    rows = {r.name: (r.self_us, r.total_us, r.calls) for r in t.top_cpu_ops}
    assert rows == {"outer": (100.0, 150.0, 2), "inner": (45.0, 50.0, 2), "leaf": (5.0, 5.0, 1)}
    assert t.gpu is None


def test_an_other_kernel_alone_is_communication_time_never_memory(tmp_path):
    """HTA counts "other" kernels (syncs) with communication in its non-compute time."""
    events = [step(1, 1000, 20), step(2, 1020, 20), launch(1001, 1), launch(1002, 2)]
    events += [kernel("gemm", 1100, 10, 1), kernel("cudaStreamSync", 1120, 5, 2)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    gpu = t.gpu
    assert (gpu.memory_us, gpu.communication_us, gpu.idle_us, gpu.span_us) == (0.0, 5.0, 10.0, 25.0)
    assert gpu.communication_total_us == 0.0  # no communication kernel at all


def test_with_steps_but_no_cpu_launches_every_gpu_event_is_dropped(tmp_path):
    """Nothing was launched from the captured steps (a correlation id 0 matches nothing)."""
    events = [step(1, 1000, 20), step(2, 1020, 20), kernel("gemm", 1100, 10, 0)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert t.gpu is None


def test_a_kernel_launched_exactly_when_the_last_step_ends_is_kept(tmp_path):
    """HTA keeps launches that start no later than the last ProfilerStep's end (<=, not <)."""
    events = [step(1, 1000, 20), step(2, 1020, 20), launch(1001, 1), launch(1040, 2), launch(1041, 3)]
    events += [kernel("gemm", 1100, 10, 1), kernel("gemm", 1120, 10, 2), kernel("gemm", 1140, 10, 3)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert (t.gpu.gpu_events, t.gpu.gpu_events_dropped) == (2, 1)


def test_parts_us_gives_each_part_its_own_field():
    from bridge_plugins.analysis.analyzers.gpu_breakdown import PARTS, parts_us

    g = GpuBreakdown(
        span_us=10.0,
        computation_us=1.0,
        communication_us=2.0,
        memory_us=3.0,
        idle_us=4.0,
        communication_total_us=2.0,
        gpu_events=1,
        gpu_events_dropped=0,
    )
    assert parts_us(g) == {"computation": 1.0, "communication": 2.0, "memory": 3.0, "idle": 4.0}
    assert list(parts_us(g)) == list(PARTS)


def test_kernels_past_the_name_limit_keep_their_type(tmp_path, monkeypatch):
    """Past MAX_NAMES distinct names the kernels share one entry per type: an NCCL kernel there is
    still communication, not computation."""
    from bridge_plugins.analysis.trace import collect

    monkeypatch.setattr(collect, "MAX_NAMES", 2)
    events = [step(1, 1000, 20), step(2, 1020, 20), launch(1001, 1), launch(1002, 2), launch(1003, 3)]
    events += [kernel("gemm_a", 1100, 10, 1), kernel("gemm_b", 1110, 10, 2)]
    events += [kernel("ncclDevKernel_AllReduce_Sum_f32", 1120, 5, 3)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    gpu = t.gpu
    assert (gpu.computation_us, gpu.communication_us) == (20.0, 5.0), gpu


def test_only_the_names_of_gpu_events_are_classified(tmp_path, monkeypatch):
    """A trace of 10^6 distinct operator names spent a tenth of its time classifying every name as
    a kernel (issue 19): only names that GPU events carry get a type, and theirs is HTA's."""
    from bridge_plugins.analysis.analyzers import gpu_breakdown

    classified: list[str] = []
    real = gpu_breakdown.kernel_type
    monkeypatch.setattr(gpu_breakdown, "kernel_type", lambda name: classified.append(name) or real(name))
    events = [step(1, 1000, 20), launch(1001, 1), launch(1002, 2)]
    events += [{**launch(1003 + i, -1), "cat": "cpu_op", "name": f"op_{i}", "args": {}} for i in range(500)]
    events += [kernel("gemm_a", 1100, 10, 1), kernel("ncclDevKernel_AllReduce_Sum_f32", 1120, 5, 2)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert sorted(classified) == ["gemm_a", "ncclDevKernel_AllReduce_Sum_f32"]
    assert [(k.name, k.type) for k in t.top_gpu_kernels] == [
        ("gemm_a", "computation"),
        ("ncclDevKernel_AllReduce_Sum_f32", "communication"),
    ]
    assert len(t.top_cpu_ops) == 500


def _union_reference(intervals: list[tuple[int, int]]) -> int:
    """The union's length by marking every microsecond (the intervals are small integers)."""
    return len({t for start, end in intervals for t in range(start, end)})


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), max_size=12))
def test_union_length_of_intervals_in_any_order(pairs):
    """_union_length on starts in any order (the breakdown's are sorted; other callers' need not be),
    equal starts and touching intervals included, against a count of the covered microseconds."""
    import numpy as np

    from bridge_plugins.analysis.analyzers.gpu_breakdown import _union_length

    starts = np.array([float(s) for s, _ in pairs])
    ends = np.array([float(s + d) for s, d in pairs])
    assert _union_length(starts, ends) == _union_reference([(s, s + d) for s, d in pairs])


def test_union_length_unsorted_fixed_cases():
    """Cases random draws may miss: all starts after the first but out of order, and a long first
    interval that covers a later, earlier-starting one."""
    import numpy as np

    from bridge_plugins.analysis.analyzers.gpu_breakdown import _union_length

    assert _union_length(np.array([0.0, 5.0, 3.0]), np.array([1.0, 6.0, 4.0])) == 3.0
    assert _union_length(np.array([10.0, 0.0, 12.0]), np.array([20.0, 2.0, 13.0])) == 12.0


def test_steps_without_gpu_events_have_no_breakdown_and_classify_nothing(tmp_path, monkeypatch):
    from bridge_plugins.analysis.analyzers import gpu_breakdown

    classified: list[str] = []
    real = gpu_breakdown.kernel_type
    monkeypatch.setattr(gpu_breakdown, "kernel_type", lambda name: classified.append(name) or real(name))
    events = [step(1, 1000, 20), step(2, 1020, 20), launch(1001, 1)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert (t.gpu, t.top_gpu_kernels, classified) == (None, [], [])


def test_gpu_events_with_no_launch_at_all_are_all_dropped(tmp_path):
    """Steps and kernels but not one launch call (correlation 0 included: no launch has it)."""
    events = [step(1, 1000, 20), step(2, 1020, 20), kernel("gemm", 1100, 10, 0), kernel("gemm", 1110, 10, 1)]
    (t,) = summarize([write(tmp_path, events)], top=None).traces
    assert t.gpu is None
    assert t.top_gpu_kernels == []

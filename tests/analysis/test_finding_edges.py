"""Each finding on the inputs at its edges: an analysis that is missing (a CPU-only trace has no
overlap, idle or launch analysis), empty lists, more rows than the evidence keeps, figures of a
single step. Built as in test_finding_thresholds.py, from job128's real summary with only the
figures a rule reads set; the cross-rank groups for ``straggler`` are written out whole."""

from __future__ import annotations

import dataclasses

from bridge_plugins.analysis.analyzers.kernel_breakdown import KernelStats
from bridge_plugins.analysis.analyzers.syncs import SyncPoints, SyncSite
from bridge_plugins.analysis.findings import (
    exposed_communication,
    host_bound,
    memcpy,
    small_kernels,
    step_variance,
    straggler,
    sync_point,
)
from bridge_plugins.analysis.schema import CrossRankGroup, CrossRankRow, RankFigures, Summary
from tests.analysis.finding_inputs import real_trace, trace


def _kernels(n: int, kind: str, calls: int = 10) -> object:
    rows = [KernelStats(f"k{i}", kind, calls, 100.0 - i, 1.0 + i, 1.0, 1.0, 0.0) for i in range(n)]
    return dataclasses.replace(real_trace().analyses.kernels, kernels=rows)


# ---------------------------------------------------------------- exposed_communication
def test_exposed_communication_needs_an_overlap_with_communication():
    overlap = real_trace().analyses.overlap
    assert exposed_communication.check(trace(overlap=None)) == []
    assert exposed_communication.check(trace(overlap=dataclasses.replace(overlap, communication_us=0.0))) == []


def test_exposed_communication_lists_three_kernels_at_most_and_none_without_a_breakdown():
    (f,) = exposed_communication.check(trace(kernels=_kernels(5, "communication")))
    assert [k["name"] for k in f.evidence["top_communication_kernels"]] == ["k0", "k1", "k2"]
    (f,) = exposed_communication.check(trace(kernels=None))
    assert f.evidence["top_communication_kernels"] == []


def test_exposed_communication_without_an_overlap_share_says_all_of_it():
    overlap = dataclasses.replace(real_trace().analyses.overlap, overlap_pct=None)
    (f,) = exposed_communication.check(trace(overlap=overlap))
    assert f.title == "rank 0: 100 % of communication is not hidden behind computation"


# ---------------------------------------------------------------- host_bound
def _gpu_trace(host_wait_us: float, streams: int = 1, launches: object = "real", idle: bool = True) -> dict:
    real = real_trace().analyses
    stream = dataclasses.replace(real.idle.streams[0], idle_us=1000.0, host_wait_us=host_wait_us)
    breakdown = dataclasses.replace(real.idle, streams=[stream] * streams) if idle else None
    t = trace(idle=breakdown, launches=real.launches if launches == "real" else launches)
    t.gpu = dataclasses.replace(t.gpu, span_us=1000.0, idle_us=500.0)
    return t


def test_host_bound_needs_a_stream_with_idle_time():
    assert host_bound.check(_gpu_trace(1000.0, idle=False)) == []
    assert host_bound.check(_gpu_trace(1000.0, streams=0)) == []
    t = _gpu_trace(0.0)
    t.analyses.idle.streams[0].idle_us = 0.0  # no idle time on the stream: no host wait either
    assert host_bound.check(t) == []


def test_host_bound_says_the_host_wait_share_in_its_title():
    (f,) = host_bound.check(_gpu_trace(600.0))
    assert f.title == "rank 0: the GPU waits on the host 60 % of its idle time (host busy elsewhere)"
    assert f.time_us_per_step == 300.0


def test_host_bound_without_a_launch_analysis_is_host_busy_elsewhere():
    (f,) = host_bound.check(_gpu_trace(1000.0, launches=None))
    e = f.evidence
    assert (e["kernels_shorter_than_launch"], e["median_launch_delay_us"], e["median_kernel_us"]) == (None, None, None)
    assert e["mode"] == "host busy elsewhere (input, Python, syncs)"


def test_host_bound_on_a_cpu_trace_without_operator_times_finds_nothing():
    steps = [dataclasses.replace(s, outside_ops_us=None) for s in real_trace().analyses.steps]
    t = trace(steps=steps)
    t.gpu = None
    assert host_bound.check(t) == []


# ---------------------------------------------------------------- small_kernels
def _launches(**changes) -> object:  # type: ignore[no-untyped-def]
    ls = real_trace().analyses.launches
    return dataclasses.replace(ls, **{"shorter_on_gpu": ls.launches, **changes})


def test_small_kernels_needs_launches():
    assert small_kernels.check(trace(launches=None)) == []
    assert small_kernels.check(trace(launches=_launches(launches=0, shorter_on_gpu=0))) == []


def test_small_kernels_lists_kernels_called_at_least_once_per_step():
    gpu = dataclasses.replace(real_trace().analyses.launches.gpu_duration_us, median=2.0)
    t = trace(launches=_launches(gpu_duration_us=gpu), kernels=_kernels(3, "computation", calls=2))
    t.steps = dataclasses.replace(t.steps, count=2)
    (f,) = small_kernels.check(t)
    assert [k["name"] for k in f.evidence["most_called_kernels"]] == ["k0", "k1", "k2"]  # equal calls: by mean
    t = trace(launches=_launches(gpu_duration_us=gpu), kernels=None)
    assert small_kernels.check(t)[0].evidence["most_called_kernels"] == []


# ---------------------------------------------------------------- step_variance
def _steps(outside: list[float | None], gpu: list[float]) -> list:
    """Steps 0-3 of 1, 1, 3 and 1 ms: step 2 is slow (a slow first or last step is not a finding); the
    given figures are steps 0-2's, and step 3 has step 0's."""
    real = real_trace().analyses.steps[0]
    durations = [1000.0, 1000.0, 3000.0, 1000.0]
    return [
        dataclasses.replace(real, step=i, start_us=i * 1e6, duration_us=d, outside_ops_us=o, gpu_us=g)
        for i, (d, o, g) in enumerate(zip(durations, [*outside, outside[0]], [*gpu, gpu[0]], strict=True))
    ]


def test_step_variance_names_the_larger_difference():
    (f,) = step_variance.check(trace(steps=_steps([100.0, 100.0, 300.0], [500.0, 500.0, 2000.0])))
    assert f.title == "rank 0: step 2 took 3.0x the median step (most of it gpu)"
    assert f.evidence["most_of_the_difference"] == "gpu_us"


def test_step_variance_leaves_out_a_figure_one_step_lacks():
    (f,) = step_variance.check(trace(steps=_steps([100.0, 100.0, None], [500.0, 500.0, 600.0])))
    assert "outside_ops_us" not in f.evidence["differences"]
    assert f.title == "rank 0: step 2 took 3.0x the median step (most of it gpu)"


# ---------------------------------------------------------------- sync_point
def test_sync_point_keeps_five_sites_and_names_none_without_them():
    sites = [SyncSite(["forward", f"op{i}", "cudaStreamSynchronize"], 7 - i, 10.0) for i in range(7)]
    syncs = SyncPoints(count=28, total_us=70.0, by_name={"cudaStreamSynchronize": 28}, per_step={1: 28}, sites=sites)
    (f,) = sync_point.check(trace(syncs=syncs))
    assert len(f.evidence["sites"]) == 5
    assert (
        f.title == "rank 0: 28.0 host-device synchronizations per step, most at forward > op0 > cudaStreamSynchronize"
    )
    (f,) = sync_point.check(trace(syncs=dataclasses.replace(syncs, sites=[])))
    assert f.title == "rank 0: 28.0 host-device synchronizations per step"


# ---------------------------------------------------------------- memcpy
def test_memcpy_without_a_bandwidth_analysis_counts_blocking_copies():
    syncs = dataclasses.replace(real_trace().analyses.syncs, by_name={"cudaMemcpy": 2})
    (f,) = memcpy.check(trace(bandwidth=None, syncs=syncs))
    assert f.evidence["pageable_copies"] == {} and f.evidence["blocking_cudaMemcpy_calls"] == 2


# ---------------------------------------------------------------- straggler
def _rank(
    rank: int, step: float | None, comp: float | None, reasons: list[str], straggler_: bool = True
) -> CrossRankRow:
    return CrossRankRow(
        rank=rank,
        file=f"rank{rank}.json",
        step_median_us=step,
        computation_us=comp,
        communication_total_us=None,
        step_vs_median=None,
        computation_vs_median=None,
        communication_vs_median=None,
        straggler=straggler_,
        straggler_reasons=reasons,
        waiting=False,
    )


def _straggler(steps: list[int], step: float | None, comp: float | None, rank: CrossRankRow) -> list:
    group = CrossRankGroup(
        steps=steps,
        medians=RankFigures(step_median_us=step, computation_us=comp, communication_total_us=None),
        ranks=[_rank(0, step, comp, [], straggler_=False), rank],
        stragglers=[rank.rank],
        waiting=[0],
    )
    summary = Summary(
        schema="", schema_version=1, inputs=[], findings=[], traces=[], cross_rank=[group], memory=None, problems=[]
    )
    return straggler.check(summary)


def test_a_straggler_over_one_step_or_none_counts_its_computation_once():
    for steps in ([7], []):
        (f,) = _straggler(steps, None, 1000.0, _rank(1, None, 1500.0, ["computation"]))
        assert f.time_us_per_step == 500.0


def test_a_straggler_is_never_a_negative_time():
    (f,) = _straggler([1, 2], 1000.0, None, _rank(1, 900.0, None, ["step time"]))
    assert f.time_us_per_step == 0.0
    (f,) = _straggler([1, 2], None, 1000.0, _rank(1, None, 800.0, ["computation"]))
    assert f.time_us_per_step == 0.0


def test_a_straggler_without_a_median_of_computation_counts_all_of_its_own():
    (f,) = _straggler([1, 2], None, None, _rank(1, None, 1000.0, ["computation"]))
    assert f.time_us_per_step == 500.0
    (f,) = _straggler([1, 2], None, None, _rank(1, None, None, ["computation"]))
    assert f.time_us_per_step == 0.0


def test_a_straggler_with_step_times_but_no_median_step_uses_its_computation():
    (f,) = _straggler([1, 2], None, 1000.0, _rank(1, 2000.0, 1600.0, ["computation"]))
    assert f.time_us_per_step == 300.0
    (f,) = _straggler([1, 2], 1000.0, 1000.0, _rank(1, 1100.0, None, ["step time"]))
    assert f.time_us_per_step == 100.0


def test_a_straggler_names_every_reason():
    (f,) = _straggler([1], 1000.0, 1000.0, _rank(1, 1200.0, 1300.0, ["step time", "computation"]))
    assert f.title == "rank 1 is a straggler (step time, computation above the median of 2 ranks)"

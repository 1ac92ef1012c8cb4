"""Every finding's threshold, just below, at and just above its value.

The base is the real summary of a GPU trace (job128's rank 0, ../shared/fixtures/gpu-traces); each
case sets only the figures the rule reads to sit on its threshold (``dataclasses.replace``), so a
`<` turned into `<=`, or a threshold moved, changes a verdict here. What each docstring says is
what is pinned: "at least" includes the threshold, "more than" does not."""

from __future__ import annotations

import dataclasses

import pytest

from bridge_plugins.analysis.analyzers.syncs import SyncPoints
from bridge_plugins.analysis.findings import (
    exposed_communication,
    host_bound,
    memcpy,
    small_kernels,
    step_variance,
    sync_point,
)
from bridge_plugins.analysis.findings.model import HIGH, LOW, MEDIUM, severity
from tests.analysis.finding_inputs import MEDIAN_US, real_trace, trace

JUST = 0.001  # how far "just below" and "just above" sit from a threshold (in us, or items)


def around(value: float) -> list[float]:
    return [value - JUST, value, value + JUST]


def kinds(found: list) -> list[str]:
    return [f.kind for f in found]


# ---------------------------------------------------------------- exposed_communication: "at least 10 %"
def test_exposed_communication_from_10_percent_of_the_step():
    got = []
    for exposed in around(exposed_communication.MIN_SHARE * MEDIAN_US):
        overlap = dataclasses.replace(real_trace().analyses.overlap, exposed_us=exposed)
        got.append(kinds(exposed_communication.check(trace(overlap=overlap))))
    assert exposed_communication.MIN_SHARE == 0.10
    assert got == [[], ["exposed_communication"], ["exposed_communication"]]


# ---------------------------------------------------------------- host_bound
def _host_bound_gpu(idle_us: float, host_wait_us: float, shorter: int = 0, launches: int = 10) -> list:
    """A GPU idle ``idle_us`` of a 1,000 us span, its one stream's idle 1,000 us of which ``host_wait_us``
    waiting on the host, and ``shorter`` of ``launches`` kernels shorter than their launch."""
    real = real_trace()
    stream = dataclasses.replace(real.analyses.idle.streams[0], idle_us=1000.0, host_wait_us=host_wait_us)
    ls = dataclasses.replace(real.analyses.launches, launches=launches, shorter_on_gpu=shorter)
    t = trace(idle=dataclasses.replace(real.analyses.idle, streams=[stream]), launches=ls)
    t.gpu = dataclasses.replace(t.gpu, span_us=1000.0, idle_us=idle_us)
    return host_bound.check(t)


def test_host_bound_from_20_percent_of_the_gpu_span_idle():
    got = [kinds(_host_bound_gpu(idle, host_wait_us=1000.0)) for idle in around(host_bound.MIN_IDLE_SHARE * 1000)]
    assert host_bound.MIN_IDLE_SHARE == 0.20 and got == [[], ["host_bound"], ["host_bound"]]


def test_host_bound_from_half_the_idle_time_waiting_on_the_host():
    got = [kinds(_host_bound_gpu(500.0, wait)) for wait in around(host_bound.MIN_HOST_WAIT_SHARE * 1000)]
    assert host_bound.MIN_HOST_WAIT_SHARE == 0.5 and got == [[], ["host_bound"], ["host_bound"]]


def test_host_bound_is_launch_bound_from_half_the_kernels_shorter_than_their_launch():
    modes = [_host_bound_gpu(500.0, 1000.0, shorter)[0].evidence["mode"] for shorter in (4, 5, 6)]
    assert modes == ["host busy elsewhere (input, Python, syncs)", "launch-bound", "launch-bound"]


def test_host_bound_on_a_cpu_trace_from_half_the_step_outside_operators():
    got = []
    for outside in around(host_bound.MIN_OUTSIDE_SHARE * MEDIAN_US):
        steps = [dataclasses.replace(s, outside_ops_us=outside) for s in real_trace().analyses.steps]
        t = trace(steps=steps)
        t.gpu = None
        t.per_step = []  # no collective or input wait to take out first (job128's are NCCL's)
        got.append(host_bound.check(t))
    assert host_bound.MIN_OUTSIDE_SHARE == 0.5 and [kinds(f) for f in got] == [[], ["host_bound"], ["host_bound"]]
    assert got[1][0].time_us_per_step == 500.0 and got[1][0].share_of_step == 0.5


# ---------------------------------------------------------------- small_kernels
def _small_kernels(shorter: int, median_kernel_us: float, launches: int = 10) -> list[str]:
    ls = real_trace().analyses.launches
    dist = dataclasses.replace(ls.gpu_duration_us, median=median_kernel_us)
    return kinds(
        small_kernels.check(
            trace(launches=dataclasses.replace(ls, launches=launches, shorter_on_gpu=shorter, gpu_duration_us=dist))
        )
    )


def test_small_kernels_from_half_the_kernels_shorter_than_their_launch():
    assert small_kernels.MIN_SHORTER == 0.5
    assert [_small_kernels(shorter, 5.0) for shorter in (4, 5, 6)] == [[], ["small_kernels"], ["small_kernels"]]


def test_small_kernels_only_while_the_median_kernel_is_under_10_us():
    assert small_kernels.MAX_MEDIAN_US == 10.0
    assert [_small_kernels(10, m) for m in around(small_kernels.MAX_MEDIAN_US)] == [["small_kernels"], [], []]


# ---------------------------------------------------------------- step_variance: "more than 50 % above"
def _step_variance(durations: list[float]) -> list:
    """Steps of these durations, in this order (the first and the last are never a finding alone)."""
    real = real_trace().analyses.steps[0]
    steps = [dataclasses.replace(real, step=i, start_us=i * 1e6, duration_us=d) for i, d in enumerate(durations)]
    return step_variance.check(trace(steps=steps))


def test_step_variance_from_a_step_more_than_50_percent_above_the_median():
    slowest = around((1 + step_variance.MIN_EXCESS) * MEDIAN_US)
    got = [_step_variance([MEDIAN_US, MEDIAN_US, d, MEDIAN_US]) for d in slowest]
    assert step_variance.MIN_EXCESS == 0.5 and [kinds(f) for f in got] == [[], [], ["step_variance"]]
    assert got[2][0].time_us_per_step == pytest.approx(500.0 + JUST)


def test_step_variance_needs_3_steps():
    assert step_variance.MIN_STEPS == 3
    assert kinds(_step_variance([MEDIAN_US, 10 * MEDIAN_US])) == []
    assert kinds(_step_variance([MEDIAN_US, 10 * MEDIAN_US, MEDIAN_US])) == ["step_variance"]


def test_step_variance_leaves_the_first_and_the_last_step_alone():
    assert kinds(_step_variance([10 * MEDIAN_US, MEDIAN_US, MEDIAN_US, MEDIAN_US])) == []
    assert kinds(_step_variance([MEDIAN_US, MEDIAN_US, MEDIAN_US, 10 * MEDIAN_US])) == []


# ---------------------------------------------------------------- sync_point: "at least one per step on average"
@pytest.mark.parametrize(
    "per_step, found",
    [({}, False), ({1: 1, 2: 0}, False), ({1: 2, 2: 0}, True), ({1: 1, 2: 1}, True), ({1: 2, 2: 1}, True)],
)
def test_sync_point_from_one_per_step_on_average(per_step, found):
    syncs = SyncPoints(
        count=sum(per_step.values()), total_us=30.0, by_name={"cudaStreamSynchronize": 3}, per_step=per_step
    )
    got = sync_point.check(trace(syncs=syncs))
    assert kinds(got) == (["sync_point"] if found else [])


# ---------------------------------------------------------------- memcpy: "any such copy"
def _memcpy(pageable: int, blocking: dict[str, int]) -> list[str]:
    real = real_trace().analyses
    copies = [dataclasses.replace(k, pageable=pageable if k.kind == "Memcpy HtoD" else 0) for k in real.bandwidth.kinds]
    syncs = dataclasses.replace(real.syncs, by_name={"aten::_local_scalar_dense": 3, **blocking})
    return kinds(memcpy.check(trace(bandwidth=dataclasses.replace(real.bandwidth, kinds=copies), syncs=syncs)))


def test_memcpy_from_one_pageable_or_one_blocking_copy():
    assert _memcpy(0, {}) == []
    assert _memcpy(1, {}) == ["memcpy"]
    assert _memcpy(0, {"cudaMemcpy": 1}) == ["memcpy"]
    assert _memcpy(0, {"hipMemcpy": 1}) == ["memcpy"]
    assert _memcpy(0, {"cudaMemcpyAsync": 1}) == []  # async copies do not block


# ---------------------------------------------------------------- severity: high from 20 %, medium from 5 %
def test_severity_at_its_two_thresholds():
    assert [severity(s) for s in around(0.20)] == [MEDIUM, HIGH, HIGH]
    assert [severity(s) for s in around(0.05)] == [LOW, MEDIUM, MEDIUM]
    assert severity(None) == LOW

"""host_bound after input_bound took its share: the input wait comes out of the time outside
operators (a CPU trace) and out of the GPU's idle and host-wait time (a GPU trace), with the figures
worked out by hand, on job128's real summary with only those figures set (finding_inputs.py)."""

from __future__ import annotations

import dataclasses

from bridge_plugins.analysis.findings import host_bound
from tests.analysis.finding_inputs import real_trace, step_row, trace


def test_on_a_cpu_trace_the_input_wait_and_communication_come_out_of_the_time_outside_operators():
    steps = [dataclasses.replace(s, outside_ops_us=900.0) for s in real_trace().analyses.steps]
    t = trace(steps=steps)
    t.gpu = None
    t.per_step = [step_row(1, input_wait_us=100.0, communication_us=50.0)]
    (f,) = host_bound.check(t)
    assert (f.time_us_per_step, f.share_of_step) == (750.0, 0.75)
    assert f.evidence["input_wait_us_per_step_left_to_input_bound"] == 100.0
    assert f.title == "rank 0: 75 % of each step runs no operator (Python or other host work)"


def test_on_a_gpu_trace_the_input_wait_comes_out_of_the_idle_and_the_host_wait():
    real = real_trace()
    stream = dataclasses.replace(real.analyses.idle.streams[0], idle_us=1000.0, host_wait_us=800.0)
    t = trace(idle=dataclasses.replace(real.analyses.idle, streams=[stream]))
    t.gpu = dataclasses.replace(t.gpu, span_us=1000.0, idle_us=500.0)
    t.per_step = [step_row(1, input_wait_us=100.0)]
    (f,) = host_bound.check(t)
    # idle 500 - 100 of input wait = 400; host wait 0.8 * 500 - 100 = 300, i.e. 75 % of that idle
    assert (f.evidence["gpu_idle_us"], f.evidence["host_wait_share_of_idle"], f.time_us_per_step) == (
        400.0,
        0.75,
        300.0,
    )
    assert "the GPU waits on the host 75 % of its idle time" in f.title

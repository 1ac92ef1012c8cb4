"""input_bound's threshold just below, at and above "at least 5 % of the median step", every field
of its finding (the span most steps name, the wait by step, the GPU or CPU wording), and its place
just ahead of its own rank's host_bound, on job128's real summary with only the steps set."""

from __future__ import annotations

from bridge_plugins.analysis.findings import input_bound
from bridge_plugins.analysis.findings.model import Finding
from bridge_plugins.analysis.findings.run import _input_first
from tests.analysis.finding_inputs import MEDIAN_US, step_row, trace

JUST = 0.001


def _trace(waits: dict[int, float], spans: dict[int, str], gpu: bool = True) -> dict:
    t = trace()
    t.per_step = [step_row(s, input_wait_us=w, input_span=spans.get(s)) for s, w in waits.items()]
    if not gpu:
        t.gpu = None
    return t


def test_from_5_percent_of_the_median_step_waiting_on_input():
    at = input_bound.MIN_SHARE * MEDIAN_US
    assert input_bound.MIN_SHARE == 0.05
    got = [[f.kind for f in input_bound.check(_trace({1: w, 2: w, 3: w}, {}))] for w in (at - JUST, at, at + JUST)]
    assert got == [[], ["input_bound"], ["input_bound"]]


def test_every_field_of_the_finding():
    t = _trace({3: 40.0, 4: 60.0, 5: 50.0}, {3: "DataLoader", 4: "get_batch", 5: "get_batch"})
    (f,) = input_bound.check(t)
    assert f.title == "rank 0: each step waits 5 % of its time on its input (get_batch) while the GPU idles"
    assert (f.kind, f.time_us_per_step, f.share_of_step, f.ranks, f.timeline) == (
        "input_bound",
        50.0,
        0.05,
        [0],
        "timeline-rank0-median",
    )
    assert f.evidence == {
        "input_span": "get_batch",
        "wait_us_per_step": 50.0,
        "wait_us_by_step": {3: 40.0, 4: 60.0, 5: 50.0},
        "share_of_median_step": 0.05,
        "gpu_during_the_wait": "idle (no kernel, memcpy or memset runs)",
    }
    assert f.advice == input_bound.ADVICE


def test_without_a_span_or_a_gpu():
    (f,) = input_bound.check(_trace({1: 900.0}, {}, gpu=False))
    assert (
        f.title == "rank 0: each step waits 90 % of its time on its input (the input) running no operator of the model"
    )
    assert "gpu_during_the_wait" not in f.evidence and f.evidence["input_span"] == "the input"


def _f(kind: str, ranks: list[int], us: float) -> Finding:
    return Finding(kind, "low", kind, us, None, {}, [], ranks)


def test_input_bound_moves_just_ahead_of_its_own_ranks_host_bound_only():
    host0, inp0 = _f("host_bound", [0], 100.0), _f("input_bound", [0], 50.0)
    assert _input_first([host0, _f("memcpy", [0], 70.0), inp0])[:2] == [inp0, host0]
    other, host1, inp = _f("memcpy", [0], 200.0), _f("host_bound", [1], 150.0), _f("input_bound", [0], 50.0)
    assert _input_first([other, host1, inp]) == [other, host1, inp]  # rank 1's host_bound is not its own

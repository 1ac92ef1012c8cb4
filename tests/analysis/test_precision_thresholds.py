"""fp32_gemm's two thresholds just below, at and just above their value ("at least half the GEMM
time", "at least 5 % of the median step"), and the advice for a GPU without bf16, on job128's real
summary with only its precision figures set (tests/analysis/finding_inputs.py)."""

from __future__ import annotations

from bridge_plugins.analysis.figures import GemmPrecision
from bridge_plugins.analysis.findings import precision
from tests.analysis.finding_inputs import MEDIAN_US, trace

JUST = 0.001


def _fp32(fp32_us: float, half_us: float, capability: float | None = 8.0) -> list:
    t = trace()
    t.precision = GemmPrecision(
        tensor_cores=True,
        fp32_us=fp32_us,
        half_us=half_us,
        device="GPU X",
        compute_capability=capability,
        fp32_kernels=[],
    )
    return precision.check(t)


def test_from_half_the_classified_gemm_time_in_fp32():
    assert precision.MIN_FP32_SHARE == 0.5
    got = [[f.kind for f in _fp32(100.0, half)] for half in (100.0 - JUST, 100.0, 100.0 + JUST)]
    assert got == [["fp32_gemm"], ["fp32_gemm"], []]


def test_from_5_percent_of_the_median_step_in_fp32():
    assert precision.MIN_STEP_SHARE == 0.05
    at = precision.MIN_STEP_SHARE * MEDIAN_US
    got = [[f.kind for f in _fp32(fp32, 0.0)] for fp32 in (at - JUST, at, at + JUST)]
    assert got == [[], ["fp32_gemm"], ["fp32_gemm"]]


def test_without_bf16_the_advice_is_fp16_then_what_stays_in_fp32():
    for capability in (7.0, 7.5):
        (f,) = _fp32(300.0, 100.0, capability)
        assert f.advice == [*precision.FP16_ADVICE, precision.ADVICE[1]]
        assert f.title == "rank 0: 75 % of GEMM/convolution time runs in fp32 on GPU X, whose Tensor Cores run fp16"
    (f,) = _fp32(300.0, 100.0, 8.0)
    assert f.advice == precision.ADVICE and f.title.endswith("run bf16")
    assert (f.evidence["fp32_share_of_gemm_time"], f.time_us_per_step) == (0.75, 150.0)

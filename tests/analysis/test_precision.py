"""fp32_gemm on the real GPU traces: which run their GEMMs and convolutions in fp32 on Tensor Cores.

job2 (A100, cutlass ``s1688gemm`` TF32 and cuDNN ``tf32f32`` kernels), the public ns_resolution
trace (V100: ``volta_sgemm``, cuDNN ``<float>`` engines) and negative_queue (A100, ``s1688gemm``)
are fp32; job128 runs fp16 embeddings beside TF32 GEMMs but its trace has no deviceProperties, so
whether the GPU has Tensor Cores is not known: no finding. Kernel names say the precision.
"""

from __future__ import annotations

import pytest

from bridge_plugins.analysis.analyzers.gemm_precision import gemm_precision
from bridge_plugins.analysis.figures import KernelRow
from bridge_plugins.analysis.pipeline import summarize
from tests.analysis.gpu_traces import FIXTURES

PUBLIC = FIXTURES.parent / "public-traces"


def fp32(path):
    return [f for f in summarize([path]).findings if f.kind == "fp32_gemm"]


def test_fp32_gemms_on_an_a100_advise_bf16():
    (f,) = fp32(FIXTURES / "job2_rank0.json.gz")
    assert f.evidence["device"] == "NVIDIA A100-PG509-200 (compute capability 8.0: Tensor Cores)"
    assert f.evidence["fp32_share_of_gemm_time"] == 1.0
    assert f.evidence["fp32_gemm_us_per_step"] == pytest.approx(39620 / 3, abs=1)
    assert (
        "s1688gemm" in f.evidence["top_fp32_kernels"][0]["name"] or "tf32" in f.evidence["top_fp32_kernels"][0]["name"]
    )
    assert "bf16" in f.advice[0] and "torch.autocast" in f.advice[0] and "Megatron Bridge" in f.advice[0]


def test_fp32_gemms_on_a_v100_advise_fp16_which_it_has():
    (f,) = fp32(next(PUBLIC.glob("ns_resolution_trace__*.json.gz")))
    assert "Tesla V100" in f.title and f.title.endswith("run fp16")
    assert "GradScaler" in f.advice[0] and not any("bf16" in a for a in f.advice)


def test_no_finding_where_tensor_cores_are_not_known_or_not_there():
    assert fp32(FIXTURES / "job128_rank0.json.gz") == []  # no deviceProperties
    assert fp32(next(PUBLIC.glob("amd_trace__*.json.gz"))) == []  # an AMD GPU: no NVIDIA Tensor Cores


def test_kernel_names_decide_the_precision():
    rows = [
        KernelRow(name=n, type="computation", total_us=10.0, calls=1)
        for n in (
            "ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_tn",  # bf16 wins over s16816
            "sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32",
            "volta_sgemm_64x64_nt",
            "void fbgemm_gpu::permute_2D_data_kernel<false, int, int>(int)",  # a library, not a GEMM
        )
    ]
    p = gemm_precision({"deviceProperties": [{"name": "NVIDIA H100", "computeMajor": 9, "computeMinor": 0}]}, rows)
    assert (p.half_us, p.fp32_us, p.tensor_cores, p.compute_capability) == (20.0, 10.0, True, 9.0)

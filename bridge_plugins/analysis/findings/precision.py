"""``fp32_gemm``: most GEMM and convolution time runs in fp32 on a GPU with Tensor Cores.

Real when the trace's GPU has Tensor Cores (analyzers/gemm_precision.py: NVIDIA, compute capability >= 7.0),
at least ``MIN_FP32_SHARE`` of the GEMM/convolution kernel time whose precision the names tell is
fp32 (TF32 included), and that fp32 time is at least ``MIN_STEP_SHARE`` of the median step. The
time at stake is half the fp32 time per step: an estimate, since bf16 (fp16 before compute
capability 8.0, which has no bf16) Tensor Cores run a GEMM at least twice as fast as TF32 ones
(A100: 312 against 156 TFLOPS; against plain fp32, 16x; V100: 125 fp16 against 15.7 fp32).
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "fp32_gemm"
MIN_FP32_SHARE = 0.5
MIN_STEP_SHARE = 0.05
SPEEDUP_AT_LEAST = 2.0
FP16_ADVICE = [  # Volta and Turing (7.x): Tensor Cores run fp16, not bf16
    "Train in fp16 with loss scaling: Megatron Bridge's fp16 mixed-precision recipe (mixed_precision='16-mixed', "
    "fp16=True with a dynamic loss scale), or torch.autocast('cuda', dtype=torch.float16) with torch.amp.GradScaler.",
]
ADVICE = [
    "Train in bf16: Megatron Bridge's mixed-precision recipes (mixed_precision='bf16_mixed', i.e. "
    "bf16=True with fp32 master weights and gradient reduction), or torch.autocast('cuda', dtype=torch.bfloat16) "
    "around the forward pass and loss.",
    "Keep what must stay in fp32 (the optimizer's master weights, softmax and loss accumulation) there: "
    "autocast and Megatron's mixed precision already do.",
    "Until then, on compute capability 8.0 or more, at least allow TF32 for fp32 GEMMs and convolutions: torch.backends.cuda.matmul.allow_tf32 = True "
    "(torch.set_float32_matmul_precision('high')) and torch.backends.cudnn.allow_tf32 = True.",
]


def check(trace: TraceSummary) -> list[Finding]:
    p, base, rank = trace.precision, step_base(trace), trace.rank
    if p is None or not p.tensor_cores or not base.median_us:
        return []
    classified = p.fp32_us + p.half_us
    fp32_per_step = base.per_step(p.fp32_us)
    if not classified or p.fp32_us < MIN_FP32_SHARE * classified or fp32_per_step < MIN_STEP_SHARE * base.median_us:
        return []
    evidence = {
        "device": f"{p.device} (compute capability {p.compute_capability:.1f}: Tensor Cores)",
        "fp32_gemm_us_per_step": fp32_per_step,
        "fp32_share_of_gemm_time": p.fp32_us / classified,
        "top_fp32_kernels": [{"name": k.name, "total_us": k.total_us, "calls": k.calls} for k in p.fp32_kernels],
    }
    bf16 = (p.compute_capability or 0) >= 8.0
    title = (
        f"rank {rank}: {100 * p.fp32_us / classified:.0f} % of GEMM/convolution time runs in fp32 "
        f"on {p.device}, whose Tensor Cores run {'bf16' if bf16 else 'fp16'}"
    )
    advice = ADVICE if bf16 else FP16_ADVICE + ADVICE[1:2]
    per_step = fp32_per_step * (1 - 1 / SPEEDUP_AT_LEAST)
    return [finding(KIND, title, base, per_step, evidence, advice, ranks=[rank], timeline=timeline_id(rank))]

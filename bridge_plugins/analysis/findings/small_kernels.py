"""``small_kernels``: most kernels are so short that launching them costs more than running them.

Real when at least ``MIN_SHORTER`` of launched kernels run for less time on the GPU than their
launch call takes on the CPU, and the median kernel is under ``MAX_MEDIAN_US``. The time at stake
is the launch overhead not covered by GPU work: for those kernels, launch time minus GPU time.
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "small_kernels"
MIN_SHORTER = 0.5
MAX_MEDIAN_US = 10.0
ADVICE = [
    "Fuse them: torch.compile the model, fused optimizers (AdamW(fused=True); Megatron Bridge "
    "optimizer with use_distributed_optimizer and fused Adam), Megatron's bias/activation/"
    "layernorm fusions (bias_activation_fusion, masked_softmax_fusion, persist_layer_norm).",
    "Capture the step in CUDA graphs (cuda_graph_impl / enable_cuda_graph) to launch them all at once.",
    "Make each kernel bigger: a larger micro_batch_size or sequence length per launch.",
]


def check(trace: TraceSummary) -> list[Finding]:
    ls, base, rank = trace.analyses.launches, step_base(trace), trace.rank
    if ls is None or not ls.launches:
        return []
    share_short = ls.shorter_on_gpu / ls.launches
    if share_short < MIN_SHORTER or (ls.gpu_duration_us.median or 0.0) >= MAX_MEDIAN_US:
        return []
    per_step = base.per_step(ls.launch_overhead_us)
    smallest = sorted(
        (k for k in (trace.analyses.kernels.kernels if trace.analyses.kernels else []) if k.calls >= base.steps),
        key=lambda k: (-k.calls, k.mean_us),
    )[:5]
    evidence = {
        "launches": ls.launches,
        "shorter_on_gpu_than_launch": ls.shorter_on_gpu,
        "median_kernel_us": ls.gpu_duration_us.median,
        "median_launch_call_us": ls.cpu_duration_us.median,
        "launches_per_step": ls.launches / base.steps,
        "most_called_kernels": [{"name": k.name, "calls": k.calls, "mean_us": k.mean_us} for k in smallest],
    }
    title = f"rank {rank}: {100 * share_short:.0f} % of kernels are shorter than their launch (median {ls.gpu_duration_us.median:.1f} us)"
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank))]

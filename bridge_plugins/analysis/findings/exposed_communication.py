"""``exposed_communication``: communication kernels that run while no computation does.

Real when that exposed time is at least ``MIN_SHARE`` of the median step. The evidence names the
overlap and the communication kernels; a rank that waits on a straggler shows exposed time that
is really the straggler's (see ``straggler``).
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "exposed_communication"
MIN_SHARE = 0.10
ADVICE = [
    "Overlap gradient reduction with the backward pass: Megatron Bridge ddp.overlap_grad_reduce=True "
    "(with use_distributed_optimizer) and ddp.overlap_param_gather=True; torch DDP does this by "
    "default, so check nothing forces a sync before backward ends.",
    "Tune bucket sizes (ddp.bucket_size / DDP(bucket_cap_mb=...)) so reduction starts early and runs in big chunks.",
    "With tensor parallelism, overlap its communication: tp_comm_overlap=True (Transformer Engine userbuffers).",
    "Cut the traffic: a larger micro-batch per all-reduce (more gradient accumulation), bf16 gradients "
    "(ddp.grad_reduce_in_fp32=False), or a smaller data-parallel size with more tensor/pipeline parallelism.",
]


def check(trace: TraceSummary) -> list[Finding]:
    o = trace.analyses.overlap
    if o is None or not o.communication_us:
        return []
    base, rank = step_base(trace), trace.rank
    per_step = base.per_step(o.exposed_us)
    share = base.share(per_step)
    if share is None or share < MIN_SHARE:
        return []
    comm = [k for k in (trace.analyses.kernels.kernels if trace.analyses.kernels else []) if k.type == "communication"][
        :3
    ]
    evidence = {
        "exposed_us": o.exposed_us,
        "communication_us": o.communication_us,
        "overlap_pct": o.overlap_pct,
        "top_communication_kernels": [{"name": k.name, "total_us": k.total_us, "calls": k.calls} for k in comm],
    }
    title = f"rank {rank}: {100 - (o.overlap_pct or 0):.0f} % of communication is not hidden behind computation"
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank))]

"""``memcpy``: host-device copies that stall: pageable (unpinned) host memory or blocking copies.

A copy from or to pageable memory is staged by the driver and blocks the host; ``cudaMemcpy``
(not Async) always does. Real when any such copy happens. The time at stake is their GPU time plus
the host time blocked in ``cudaMemcpy`` per step.
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "memcpy"
ADVICE = [
    "Pin host buffers: DataLoader(pin_memory=True) (Megatron Bridge: dataset.pin_memory=True), "
    "tensor.pin_memory(), then .to(device, non_blocking=True).",
    "Copies to the host (DtoH) usually come from .item()/.cpu()/.tolist() in the loop: see sync_point.",
    "Keep data on the GPU between steps instead of round-tripping through the host.",
]


def check(trace: TraceSummary) -> list[Finding]:
    a, base, rank = trace.analyses, step_base(trace), trace.rank
    kinds = a.bandwidth.kinds if a.bandwidth else []
    pageable = [k for k in kinds if k.pageable]
    blocking = a.syncs.by_name.get("cudaMemcpy", 0) + a.syncs.by_name.get("hipMemcpy", 0)
    if not pageable and not blocking:
        return []
    copies = sum(k.pageable for k in pageable)
    gpu_us = sum(k.pageable_us for k in pageable)
    blocked_us = sum(s.total_us for s in a.syncs.sites if s.stack and s.stack[-1] in ("cudaMemcpy", "hipMemcpy"))
    per_step = base.per_step(gpu_us + blocked_us)
    evidence = {
        "pageable_copies": {k.kind: k.pageable for k in pageable},
        "pageable_copies_per_step": copies / base.steps,
        "blocking_cudaMemcpy_calls": blocking,
        "copy_time_us": gpu_us,
        "bytes_by_kind": {k.kind: k.bytes for k in kinds},
    }
    title = f"rank {rank}: {copies} copies through pageable host memory, {blocking} blocking cudaMemcpy calls"
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank))]

"""``sync_point``: the host stops and waits for the GPU inside the steps.

Stream, device and event synchronizations, blocking ``cudaMemcpy`` and ``.item()``-style reads
(``aten::_local_scalar_dense``) recorded inside ProfilerSteps. Real when there is at least one per
step on average. The time at stake is the time the host spent blocked in them per step (a lower
bound: the GPU also runs dry while the host refills its queue).
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "sync_point"
ADVICE = [
    "Do not read GPU values in the step: keep the loss on the GPU and call .item() only every "
    "log_interval steps (Megatron Bridge: logger.log_interval), or accumulate in a tensor.",
    "Avoid hidden syncs: torch.nonzero/masked_select with data-dependent shapes, bool(tensor) in an if, "
    "printing tensors, .cpu()/.tolist() in the loop; find them with torch.cuda.set_sync_debug_mode('warn').",
    "Copy to the host with non_blocking=True into pinned memory and read the value a step later.",
]


def check(trace: TraceSummary) -> list[Finding]:
    s, base, rank = trace.analyses.syncs, step_base(trace), trace.rank
    in_steps = sum(s.per_step.values())
    if not s.per_step or in_steps < len(s.per_step):
        return []
    per_step_count = in_steps / len(s.per_step)
    per_step = base.per_step(s.total_us)
    evidence = {
        "per_step": s.per_step,
        "by_name": s.by_name,
        "blocked_us": s.total_us,
        "sites": [{"stack": x.stack, "count": x.count, "total_us": x.total_us} for x in s.sites[:5]],
    }
    where = s.sites[0].stack if s.sites else []
    title = f"rank {rank}: {per_step_count:.1f} host-device synchronizations per step" + (
        f", most at {' > '.join(where[-3:])}" if where else ""
    )
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank))]

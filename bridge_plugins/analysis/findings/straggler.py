"""``straggler``: one rank holds the others back (summary's cross-rank table, cross_rank.py).

Real for each rank the cross-rank analysis marks as a straggler (median step or computation more
than 10 % above the median across ranks of the same steps). The time at stake is how far its
median step (or, without step times, its computation) is above the median across ranks: every
other rank waits that long in its next collective.
"""

from __future__ import annotations

from bridge_plugins.analysis.findings.model import Finding, StepBase, finding, timeline_id
from bridge_plugins.analysis.schema import Summary

KIND = "straggler"
ADVICE = [
    "Compare the straggler's kernels with a healthy rank's: `bridge-plugins compare` on the two "
    "traces; a slower GPU (clocks, thermal throttling, ECC) shows as every kernel slower.",
    "Check for uneven work: data (sequence lengths, packing) or layers (pipeline stages, MoE experts) "
    "that give this rank more to do; balance them (e.g. variable-length batching by tokens).",
    "Check the host: other processes, CPU affinity/NUMA binding, a slower node or NIC.",
]


def check(summary: Summary) -> list[Finding]:
    out = []
    for group in summary.cross_rank:
        medians = group.medians
        for r in group.ranks:
            if not r.straggler:
                continue
            steps = max(len(group.steps), 1)
            if r.step_median_us is not None and medians.step_median_us:
                per_step = max(r.step_median_us - medians.step_median_us, 0.0)
            else:
                per_step = max((r.computation_us or 0.0) - (medians.computation_us or 0.0), 0.0) / steps
            if r.computation_us is not None and medians.computation_us:
                per_step = max(per_step, (r.computation_us - medians.computation_us) / steps)
            evidence = {
                "steps": group.steps,
                "reasons": r.straggler_reasons,
                "step_vs_median": r.step_vs_median,
                "computation_vs_median": r.computation_vs_median,
                "waiting_ranks": group.waiting,
                "ranks": {
                    x.rank: {"step_median_us": x.step_median_us, "computation_us": x.computation_us}
                    for x in group.ranks
                },
            }
            base = StepBase(steps, medians.step_median_us)
            title = f"rank {r.rank} is a straggler ({', '.join(r.straggler_reasons)} above the median of {len(group.ranks)} ranks)"
            out.append(
                finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[r.rank], timeline=timeline_id(r.rank))
            )
    return out

"""``step_variance``: a step much slower than the median step, and what differed in it.

Real when at least ``MIN_STEPS`` steps were captured and the slowest step other than the first and
the last is more than ``MIN_EXCESS`` above the median: the window's first step (warm-up, a data
loader starting its workers) and its last (cut short by Ctrl-C or the window's end, or closing the
profiler) are not findings on their own. The time at stake is the excess averaged over the steps. The evidence compares
the slowest step with the median one: time outside operators (input, Python, GC), launches, GPU
time and synchronizations.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from bridge_plugins.analysis.findings.model import Finding, finding, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

if TYPE_CHECKING:  # a type only: the Summary's types load no analyzer (numpy); no cycle (tests/test_import_graph.py)
    from bridge_plugins.analysis.analyzers.step_detail import StepDetail

KIND = "step_variance"
MIN_STEPS = 3
MIN_EXCESS = 0.5
ADVICE = [
    "If the slow step spent its extra time outside operators: the input pipeline stalled (more "
    "DataLoader workers, prefetching) or Python garbage collection ran (gc.freeze() after setup; "
    "Megatron Bridge: train.manual_gc=True with manual_gc_interval).",
    "If it made more launches or synchronizations: a periodic action (logging, evaluation, "
    "checkpointing) runs in that step; make it asynchronous (async checkpoint save) or less frequent.",
    "If its GPU work took longer: look for a straggling rank at that step or a shape change "
    "(variable sequence length); pad or bucket sequences to stable shapes.",
]


def _differences(slow: StepDetail, typical: StepDetail) -> dict[str, dict[str, float]]:
    out = {}
    for field in ("duration_us", "outside_ops_us", "launches", "gpu_us", "syncs"):
        a, b = getattr(slow, field), getattr(typical, field)
        if a is not None and b is not None:
            out[field] = {"slowest": a, "median_step": b, "delta": a - b}
    return out


def check(trace: TraceSummary) -> list[Finding]:
    steps, base, rank = trace.analyses.steps, step_base(trace), trace.rank
    if len(steps) < MIN_STEPS:
        return []
    med = statistics.median(s.duration_us for s in steps)
    inner = sorted(steps, key=lambda s: s.start_us)[1:-1]
    slow = max(inner, key=lambda s: s.duration_us)
    if slow.duration_us <= (1 + MIN_EXCESS) * med:
        return []
    typical = min(steps, key=lambda s: abs(s.duration_us - med))
    diffs = _differences(slow, typical)
    biggest = max(
        (k for k in ("outside_ops_us", "gpu_us") if k in diffs), key=lambda k: diffs[k]["delta"], default=None
    )
    evidence = {
        "slowest_step": slow.step,
        "slowest_us": slow.duration_us,
        "median_us": med,
        "typical_step": typical.step,
        "differences": diffs,
        "most_of_the_difference": biggest,
    }
    title = f"rank {rank}: step {slow.step} took {slow.duration_us / med:.1f}x the median step" + (
        f" (most of it {biggest.removesuffix('_us').replace('_', ' ')})" if biggest else ""
    )
    per_step = base.per_step(slow.duration_us - med)
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank, "slowest"))]

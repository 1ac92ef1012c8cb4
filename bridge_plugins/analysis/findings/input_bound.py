"""``input_bound``: steps wait on their input (the data loader) while the GPU has nothing to run.

Real when the median step's input wait (``per_step[i].input_wait_us``: a DataLoader fetch or a
Megatron-style ``get_batch`` / ``next(data_iterator)`` span with no GPU event running) is at least
``MIN_SHARE`` of it, torch-tb-profiler's bar. That wait is the time at stake; ``host_bound`` no
longer claims it (:func:`explained_us`) and ``rank_findings`` ranks this first. docs/diagnose.md."""

from __future__ import annotations

from collections import Counter

from bridge_plugins.analysis.findings.model import Finding, finding, median, step_base, timeline_id
from bridge_plugins.analysis.schema import TraceSummary

KIND = "input_bound"
MIN_SHARE = 0.05
ADVICE = [
    "Load batches ahead of the step in worker processes: torch.utils.data.DataLoader(num_workers=4 or more, "
    "pin_memory=True, persistent_workers=True, prefetch_factor=2 or more), so the next batch is ready "
    "when the step asks for it.",
    "Megatron Bridge: raise dataset.num_workers (its DataLoader's workers), keep dataset.pin_memory=True and "
    "dataset.persistent_workers=True, and use a prepared (indexed, memory-mapped) dataset rather than "
    "tokenizing in the loop.",
    "Move the work out of __getitem__/collate (decoding, tokenizing, augmenting) into a preprocessing pass, "
    "and copy batches to the GPU with non_blocking=True from pinned memory.",
]


def explained_us(trace: TraceSummary) -> float:
    """The input wait per step (the median over the captured steps; 0 without steps)."""
    return median([p.input_wait_us or 0.0 for p in trace.per_step]) or 0.0


def check(trace: TraceSummary) -> list[Finding]:
    base, rank, steps = step_base(trace), trace.rank, trace.per_step
    per_step = explained_us(trace)
    if not base.median_us or per_step < MIN_SHARE * base.median_us:
        return []
    spans = Counter(p.input_span for p in steps if p.input_span)
    span = spans.most_common(1)[0][0] if spans else "the input"
    waiting = {p.step: p.input_wait_us for p in steps}
    evidence: dict = {
        "input_span": span,
        "wait_us_per_step": per_step,
        "wait_us_by_step": waiting,
        "share_of_median_step": per_step / base.median_us,
    }
    if trace.gpu is not None:
        evidence["gpu_during_the_wait"] = "idle (no kernel, memcpy or memset runs)"
    where = "while the GPU idles" if trace.gpu is not None else "running no operator of the model"
    title = f"rank {rank}: each step waits {100 * per_step / base.median_us:.0f} % of its time on its input ({span}) {where}"
    return [finding(KIND, title, base, per_step, evidence, ADVICE, ranks=[rank], timeline=timeline_id(rank))]

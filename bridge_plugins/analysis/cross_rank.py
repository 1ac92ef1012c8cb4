"""Which rank holds the others back, and which ranks wait on it.

In synchronous data-parallel training every rank waits at each collective for the slowest. Among
traces of the same steps, a **straggler** is a rank whose median step or computation time exceeds
the ranks' median by more than ``THRESHOLD``; the ranks **waiting** on it are the others whose
communication time is at or above the median. A group of one rank has no stragglers.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Sequence

from bridge_plugins.analysis.schema import CrossRankGroup, CrossRankRow, RankFigures, TraceSummary

THRESHOLD = 0.10
FIGURES = tuple(f.name for f in dataclasses.fields(RankFigures))  # compared across ranks


def _excess(value: float | None, median: float | None) -> float | None:
    """How far above the median, as a fraction of it (None where either is missing or 0)."""
    if value is None or not median:
        return None
    return value / median - 1.0


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def cross_rank(traces: Sequence[TraceSummary]) -> list[CrossRankGroup]:
    """The cross-rank table per group of traces with the same steps (summary's ``cross_rank``)."""
    groups: dict[tuple, list[TraceSummary]] = defaultdict(list)
    for t in traces:
        groups[tuple(t.steps.captured)].append(t)
    out = []
    for steps, members in sorted(groups.items()):
        members = sorted(members, key=lambda t: (t.rank or 0, t.file))
        figures = [
            RankFigures(
                step_median_us=t.steps.median_us,
                computation_us=t.gpu.computation_us if t.gpu else None,
                communication_total_us=t.gpu.communication_total_us if t.gpu else None,
            )
            for t in members
        ]
        medians = RankFigures(**{k: _median([getattr(f, k) for f in figures]) for k in FIGURES})
        rows = [_row(t, f, medians, alone=len(members) == 1) for t, f in zip(members, figures, strict=True)]
        stragglers = [r.rank for r in rows if r.straggler]
        waiting = [
            r.rank
            for r in rows
            if stragglers
            and not r.straggler
            and r.communication_vs_median is not None
            and r.communication_vs_median >= 0.0
        ]
        for r in rows:
            r.waiting = r.rank in waiting
        out.append(
            CrossRankGroup(steps=list(steps), medians=medians, ranks=rows, stragglers=stragglers, waiting=waiting)
        )
    return out


def _row(t: TraceSummary, figures: RankFigures, medians: RankFigures, alone: bool) -> CrossRankRow:
    """A rank's row; ``waiting`` is set once the group's stragglers are known."""
    vs = {k: _excess(getattr(figures, k), getattr(medians, k)) for k in FIGURES}
    reasons = [
        k for k, key in (("step", "step_median_us"), ("computation", "computation_us")) if (vs[key] or 0.0) > THRESHOLD
    ]
    straggler = not alone and bool(reasons)
    return CrossRankRow(
        rank=t.rank,
        file=t.file,
        step_median_us=figures.step_median_us,
        computation_us=figures.computation_us,
        communication_total_us=figures.communication_total_us,
        step_vs_median=vs["step_median_us"],
        computation_vs_median=vs["computation_us"],
        communication_vs_median=vs["communication_total_us"],
        straggler=straggler,
        straggler_reasons=reasons if straggler else [],
        waiting=False,
    )

"""Many ranks in one view: what the terminal and the report show instead of one row per rank.

From ``MANY_RANKS`` traces on, a table or bar per rank stops being readable (1,000 ranks: 1,000
rows, a 20 MB page). The view becomes: rank x step grids (step time, GPU idle share) drawn as
heatmaps, the spread across ranks, the stragglers only, and the top operators of a few ranks
(``detail``). Both ``text.many_ranks`` and ``report.heatmap`` build on this module, so the
terminal and the page show the same figures.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bridge_plugins.analysis.analyzers.gpu_breakdown import PARTS, parts_us
from bridge_plugins.analysis.schema import CrossRankRow, GpuBreakdown, Summary, TraceSummary

MANY_RANKS = 32
"""From this many traces on, summary and report show the many-ranks view."""
MAX_ROWS = 1000
"""A heatmap has at most this many rows; more traces share a row (its cell is their maximum)."""
MAX_COLUMNS = 20
"""... and at most this many step columns (more steps share a column, again by their maximum)."""


def is_many(summary: Summary) -> bool:
    return len(summary.traces) >= MANY_RANKS


@dataclass
class Grid:
    """Rows of traces x columns of steps; ``cells[row][col]`` is a number or None (no such step)."""

    rows: list[tuple[int, int]]  # each row's first and last rank
    columns: list[tuple[int, int]]  # each column's first and last step
    cells: list[list[float | None]]

    def values(self) -> list[float]:
        return [v for row in self.cells for v in row if v is not None]


def _groups(n: int, most: int) -> list[range]:
    size = max(1, math.ceil(n / most))
    return [range(i, min(i + size, n)) for i in range(0, n, size)]


def _max(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def grid(traces: Sequence[TraceSummary], key: str) -> Grid:
    """The ``per_step`` figure ``key`` ("time_us" or "gpu_idle_share") of every trace, by rank then
    step, folded to at most MAX_ROWS x MAX_COLUMNS cells by the maximum (the worst shows)."""
    steps = sorted({p.step for t in traces for p in t.per_step})
    at = {n: i for i, n in enumerate(steps)}
    full = []
    for t in traces:
        row: list[float | None] = [None] * len(steps)
        for p in t.per_step:
            row[at[p.step]] = getattr(p, key)
        full.append(row)
    row_groups, col_groups = _groups(len(traces), MAX_ROWS), _groups(len(steps), MAX_COLUMNS)
    return Grid(
        rows=[(traces[g[0]].rank, traces[g[-1]].rank) for g in row_groups],
        columns=[(steps[g[0]], steps[g[-1]]) for g in col_groups],
        cells=[[_max(full[r][c] for r in rg for c in cg) for cg in col_groups] for rg in row_groups],
    )


@dataclass
class Spread:
    """How a figure spreads across ranks: quantiles, and which rank has the highest value."""

    label: str
    count: int
    min: float
    p10: float
    median: float
    p90: float
    max: float
    max_rank: int


def _quantile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), on a sorted list."""
    pos = q * (len(sorted_values) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def spread(label: str, by_rank: list[tuple[int, float | None]]) -> Spread | None:
    present = [(v, r) for r, v in by_rank if v is not None]
    if not present:
        return None
    values = sorted(v for v, _ in present)
    top_value, top_rank = max(present, key=lambda x: (x[0], -x[1]))
    return Spread(
        label,
        len(values),
        values[0],
        _quantile(values, 0.1),
        _quantile(values, 0.5),
        _quantile(values, 0.9),
        top_value,
        top_rank,
    )


def _shares(g: GpuBreakdown | None) -> dict[str, float] | None:
    """Each GPU part's share of the span; None without GPU time."""
    if not g or not g.span_us:
        return None
    return {part: us / g.span_us for part, us in parts_us(g).items()}


def spreads(summary: Summary) -> list[Spread]:
    """Median step time, and each GPU share of the span, across the traces."""
    traces = summary.traces
    out = [spread("median step time (us)", [(t.rank, t.steps.median_us) for t in traces])]
    shares = [(t.rank, _shares(t.gpu)) for t in traces]
    for part in PARTS:
        out.append(spread(f"GPU {part} share", [(rank, share[part] if share else None) for rank, share in shares]))
    return [s for s in out if s is not None]


def stragglers(summary: Summary) -> list[CrossRankRow]:
    """The cross-rank rows of the stragglers, most behind first (by step, then computation excess)."""
    rows = [r for g in summary.cross_rank for r in g.ranks if r.straggler]
    return sorted(rows, key=lambda r: (-(r.step_vs_median or 0.0), -(r.computation_vs_median or 0.0), r.rank))


def waiting_count(summary: Summary) -> int:
    return sum(len(g.waiting) for g in summary.cross_rank)


def detail(summary: Summary, most: int = 3) -> list[TraceSummary]:
    """The traces worth opening: the worst stragglers, else the lowest rank."""
    by_rank: dict[int, TraceSummary] = {}
    for t in summary.traces:
        by_rank.setdefault(t.rank, t)
    chosen = [by_rank[r.rank] for r in stragglers(summary)[:most] if r.rank in by_rank]
    return chosen or summary.traces[:1]

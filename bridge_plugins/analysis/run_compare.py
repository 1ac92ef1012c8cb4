"""``compare(base, new)``: what changed between two runs (job directories or traces).

Op and kernel times per rank-step (or per trace when a trace has no steps), step time as the
median of the traces' median steps, the mean GPU breakdowns side by side; changes of at least
SHOWN_US are listed. The JSON layout (``bridge-plugins.compare/1``): docs/formats.md.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bridge_plugins.analysis.figures import GpuParts
from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.pipeline import summarize
from bridge_plugins.analysis.schema import Problem, Summary

SCHEMA = "bridge-plugins.compare/1"
SHOWN_US = 5.0
"""The smallest change listed as a regression or improvement: half the 0.01 ms that the tables
show, so a listed change never prints as +0.00 or -0.00."""


GPU_KEYS = tuple(f.name for f in dataclasses.fields(GpuParts))


@dataclass(kw_only=True)
class RunProblem(Problem):
    """A file either run skipped: ``run`` is "base" or "new"."""

    run: str


@dataclass(frozen=True, kw_only=True)
class DeltaRow:
    """One op or kernel in both runs: time and calls (normalized: see ``RunComparison.normalized``)."""

    name: str
    base_us: float
    new_us: float
    delta_us: float
    base_calls: float
    new_calls: float
    delta_calls: float


@dataclass(frozen=True, kw_only=True)
class RunFigures:
    """One run's side of a comparison: its inputs, traces, rank-steps, median step and mean GPU breakdown."""

    inputs: list[str]
    traces: int
    rank_steps: int
    step_median_us: float | None
    gpu: GpuParts | None  # the mean of the traces' GPU breakdowns


@dataclass(frozen=True, kw_only=True)
class RunComparison:
    """What changed between two runs (``bridge-plugins.compare/1``, docs/formats.md)."""

    schema: str
    normalized: str  # "per rank-step" or "per trace"
    base: RunFigures
    new: RunFigures
    step_delta_us: float | None
    step_delta_pct: float | None
    gpu_delta: GpuParts | None
    ops_regressions: list[DeltaRow]
    ops_improvements: list[DeltaRow]
    kernels_regressions: list[DeltaRow]
    kernels_improvements: list[DeltaRow]
    problems: list[RunProblem]  # the files either run skipped


Row = tuple[str, float, int]
"""(name, time in microseconds, calls) of one op or kernel row of a trace."""


def _ops(s: Summary) -> Iterator[Row]:
    return ((r.name, r.self_us, r.calls) for t in s.traces for r in t.top_cpu_ops)


def _kernels(s: Summary) -> Iterator[Row]:
    return ((r.name, r.total_us, r.calls) for t in s.traces for r in t.top_gpu_kernels)


def _run_figures(s: Summary) -> RunFigures:
    traces = s.traces
    medians = [t.steps.median_us for t in traces if t.steps.median_us is not None]
    gpus = [t.gpu for t in traces if t.gpu]
    return RunFigures(
        inputs=s.inputs,
        traces=len(traces),
        rank_steps=sum(t.steps.count for t in traces),
        step_median_us=statistics.median(medians) if medians else None,
        gpu=GpuParts(**{k: statistics.fmean(getattr(g, k) for g in gpus) for k in GPU_KEYS}) if gpus else None,
    )


def _table(rows_in: Iterable[Row], divisor: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for name, us, calls in rows_in:
        rows[name][0] += us / divisor
        rows[name][1] += calls / divisor
    return rows


def _deltas(
    base: Iterable[Row], new: Iterable[Row], bd: int, nd: int, top: int | None
) -> tuple[list[DeltaRow], list[DeltaRow]]:
    b, n = _table(base, bd), _table(new, nd)
    rows: list[DeltaRow] = []
    for name in set(b) | set(n):
        (bu, bc), (nu, nc) = b.get(name, (0.0, 0.0)), n.get(name, (0.0, 0.0))
        rows.append(
            DeltaRow(
                name=name, base_us=bu, new_us=nu, delta_us=nu - bu, base_calls=bc, new_calls=nc, delta_calls=nc - bc
            )
        )
    worse = sorted((r for r in rows if r.delta_us >= SHOWN_US), key=lambda r: (-r.delta_us, r.name))
    better = sorted((r for r in rows if r.delta_us <= -SHOWN_US), key=lambda r: (r.delta_us, r.name))
    return worse[:top] if top else worse, better[:top] if top else better


def compare(
    base_paths: Sequence[str | Path],
    new_paths: Sequence[str | Path],
    top: int | None = 10,
    workers: Workers | None = None,
) -> RunComparison:
    """The comparison (layout: docs/formats.md). Raises NothingToRead if either run has nothing readable."""
    return compare_runs(
        summarize(base_paths, top=None, workers=workers), summarize(new_paths, top=None, workers=workers), top
    )


def compare_runs(base: Summary, new: Summary, top: int | None = 10) -> RunComparison:
    """The comparison of two summaries made with ``top=None`` (every op and kernel), for a caller
    that has them already (the HTML report): each trace is read once."""
    per_step = all(t.steps.count for t in base.traces + new.traces)
    fb, fn = _run_figures(base), _run_figures(new)
    bd, nd = ((f.rank_steps if per_step else f.traces) or 1 for f in (fb, fn))  # what each run's totals divide by
    ops_worse, ops_better = _deltas(_ops(base), _ops(new), bd, nd, top)
    k_worse, k_better = _deltas(_kernels(base), _kernels(new), bd, nd, top)
    step_delta = (
        None if fb.step_median_us is None or fn.step_median_us is None else (fn.step_median_us - fb.step_median_us)
    )
    return RunComparison(
        schema=SCHEMA,
        normalized="per rank-step" if per_step else "per trace",
        base=fb,
        new=fn,
        step_delta_us=step_delta,
        step_delta_pct=None if step_delta is None or not fb.step_median_us else 100 * step_delta / fb.step_median_us,
        gpu_delta=GpuParts(**{k: getattr(fn.gpu, k) - getattr(fb.gpu, k) for k in GPU_KEYS})
        if fb.gpu and fn.gpu
        else None,
        ops_regressions=ops_worse,
        ops_improvements=ops_better,
        kernels_regressions=k_worse,
        kernels_improvements=k_better,
        problems=[
            RunProblem(file=p.file, error=p.error, run=run)
            for run, s in (("base", base), ("new", new))
            for p in s.problems
        ],
    )

"""``build(paths, baseline)``: the report page of a run (``bridge-plugins report``, the front
door's ``build_report``): reads every trace and snapshot once through ``summarize``, compares with
a baseline run (``compare_runs``, the memory comparison), then renders (report.html only renders).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bridge_plugins.analysis.memory.snapshot_diff import compare_snapshot_figures
from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.pipeline import summarize, with_top
from bridge_plugins.analysis.report.html import render
from bridge_plugins.analysis.run_compare import compare_runs
from bridge_plugins.analysis.schema import Problem


def build(
    paths: Sequence[str | Path],
    baseline: Sequence[str | Path] | None = None,
    top: int = 10,
    workers: Workers | None = None,
) -> tuple[str, list[Problem]]:
    """Summarize ``paths`` (and compare with ``baseline``): (the page, the files skipped).
    Raises analysis.NothingToRead when nothing in ``paths`` (or ``baseline``) can be read.
    ``workers`` (analysis.parallel.Workers) reads the traces in parallel."""
    everything = summarize(
        paths, top=None, workers=workers
    )  # every trace and snapshot is read once, also for the comparison
    summary = with_top(everything, top)
    comparison = memory_comparison = None
    if baseline:
        base = summarize(baseline, top=None, workers=workers)
        comparison = compare_runs(base, everything, top=top)
        base_mem = base.memory.files if base.memory else []
        new_mem = summary.memory.files if summary.memory else []
        if base_mem and new_mem:
            first = min(base_mem, key=lambda f: (f.rank is None, f.rank or 0, f.file))
            now = min(new_mem, key=lambda f: (f.rank is None, f.rank or 0, f.file))
            memory_comparison = compare_snapshot_figures(first, now)
    skipped = [*summary.problems, *(comparison.problems if comparison else [])]
    return render(summary, comparison, memory_comparison), skipped

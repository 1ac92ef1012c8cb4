"""The main job's end-of-run text: steps captured, files per rank, top operators (a front-door
module: it reads the job directory through ``summarize``, then renders with text/).

Used by the main job (``python -m recipes``) to tell the user what they got. Imports neither
torch nor nemo_run: it only reads files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bridge_plugins.analysis.pipeline import summarize, with_top
from bridge_plugins.analysis.schema import Summary
from bridge_plugins.analysis.text.cells import step_ranges
from bridge_plugins.analysis.text.memory import fmt_bytes
from bridge_plugins.analysis.text.summary import to_text
from bridge_plugins.jobdir.names import DEFAULT_SNAPSHOT_NAME
from bridge_plugins.jobdir.scan import UNRECOGNISED_TRACE, Artifacts, NothingToRead, find_artifacts


def steps_line(steps: dict[int, list[list[int]]]) -> str:
    """'Steps captured per rank: rank 0: 10-14, rank 1: 10-14'; a rank's windows joined by 'and'."""
    per_rank = []
    for rank, windows in sorted(steps.items()):
        text = " and ".join(step_ranges(w) for w in windows if w)
        if text:
            per_rank.append(f"rank {rank}: {text}")
    return "Steps captured per rank: " + ", ".join(per_rank)


def report(
    job_dir: Path,
    memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME,
    top: int = 10,
    arts: Artifacts | None = None,
    summary: Summary | None = None,
) -> tuple[str, dict[int, list[list[int]]]]:
    """A human-readable summary of a job's artifacts, and the steps captured per rank, one list per
    trace (window): a rank with several windows (on-demand triggers, requeues) keeps them all.

    ``arts`` and ``summary`` (``summarize([job_dir], top=None)``), when the caller has them, are
    used as they are, so nothing is scanned or read twice. A file the summary could not read is
    listed with the reason instead of failing the whole report.
    """
    if arts is None:
        arts = find_artifacts(job_dir, memory_snapshot_path)
    if summary is None:
        try:
            summary = summarize([p for paths in arts.traces.values() for p in paths]) if arts.traces else None
        except NothingToRead:
            summary = None
    if summary is not None:  # the trace figures only, as many rows as asked for
        summary = dataclasses.replace(with_top(summary, top), memory=None)
    by_file = {t.file: t for t in summary.traces} if summary else {}
    problems = {x.file: x.error for x in summary.problems} if summary else {}
    lines: list[str] = []
    steps: dict[int, list[list[int]]] = {}
    for rank in sorted(set(arts.traces) | set(arts.memory)):
        for p in arts.traces.get(rank, []):
            t = by_file.get(str(p))
            if t is None:
                lines.append(f"  rank {rank}: {p}  unreadable: {problems.get(str(p), 'could not be read')}")
                continue
            steps.setdefault(rank, []).append(t.steps.captured)
            lines.append(
                f"  rank {rank}: {p}  ({fmt_bytes(p.stat().st_size)}), steps captured: {step_ranges(t.steps.captured)}"
            )
        for p in arts.memory.get(rank, []):
            lines.append(f"  rank {rank}: {p}  ({fmt_bytes(p.stat().st_size)}), memory snapshot")
    for p in arts.nsys:
        lines.append(f"  nsys: {p}  ({fmt_bytes(p.stat().st_size)})")
    for p in arts.skipped:
        lines.append(f"  skipped {p}: {UNRECOGNISED_TRACE}")
    if not lines:
        lines.append(f"  (no profiling artifacts under {job_dir})")
    out = ["Artifacts:"] + lines
    if summary and by_file:
        out += ["", to_text(summary).rstrip()]
    return "\n".join(out), steps

"""The analysis pipeline: ``summarize(paths)``, every figure of ``bridge-plugins summary`` as one
typed Summary (analysis.schema), and ``diagnose(paths)``, its findings alone.

One object, so the terminal tables, the HTML report, ``compare`` and ``--json`` all show the same
figures. Its fields, units and versions: docs/analysis-schema.md ("Summary object"). Each trace is
read by its format's reader (formats.py: chrome.py, nsys/), then numbered; then the cross-rank table
(cross_rank.py) and the findings (findings/).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bridge_plugins.analysis import formats
from bridge_plugins.analysis.chrome import summarize_trace
from bridge_plugins.analysis.cross_rank import cross_rank
from bridge_plugins.analysis.findings.run import rank_findings
from bridge_plugins.analysis.parallel import Workers
from bridge_plugins.analysis.schema import Diagnosis, Problem, Summary, TraceAsRead, TraceSummary
from bridge_plugins.analysis.trace.reader import TraceError
from bridge_plugins.jobdir.scan import NothingToRead, find_inputs

if TYPE_CHECKING:  # imported where there are snapshots: a trace's summary never loads the snapshot readers
    from bridge_plugins.analysis.memory.results import MemoryEntry

__all__ = [
    "summarize",
    "diagnose",
    "summarize_trace",
    "numbered",
    "with_top",
    "without_timelines",
    "SCHEMA",
    "SCHEMA_VERSION",
]
"""``summarize_trace`` (the Chrome-trace reader, chrome.py) is importable here too, where it was."""

SCHEMA = "bridge-plugins.summary/1"
SCHEMA_VERSION = 2  # bumped when a field changes meaning or goes; new fields do not bump it


def _memory(snapshots: list[Path], problems: list[Problem]) -> MemoryEntry | None:
    """The ``memory`` entry: the snapshots given and each one's figures (memory.snapshot.memory_entry);
    a snapshot that cannot be read goes to ``problems``."""
    if not snapshots:
        return None
    from bridge_plugins.analysis.memory.results import MemoryEntry
    from bridge_plugins.analysis.memory.snapshot import memory_entry

    read = memory_entry(snapshots)
    problems.extend(read.problems)
    return MemoryEntry(snapshots=[str(p) for p in snapshots], files=read.files)


def summarize(
    paths: Sequence[str | Path], top: int | None = 10, workers: Workers | None = None, timelines: bool = True
) -> Summary:
    """The Summary (module docstring) of job directories and/or trace and snapshot files.

    Files that cannot be read are listed in ``problems`` and the rest are summarized. Raises
    job.NothingToRead when no input could be read at all. ``top=None`` keeps every op and kernel.
    ``workers`` reads the traces in parallel (see analysis.parallel); the result is the same.
    ``timelines`` False: no step timelines drawn (as ``without_timelines`` leaves them).
    """
    found = find_inputs(paths, formats.knows)
    read: list[TraceAsRead] = []
    reader = formats.read if timelines else formats.read_without_timelines
    for done in (workers or Workers()).map(reader, found.traces, TraceError):
        if done.error is None:
            read.append(cast(TraceAsRead, done.value))  # what summarize_trace returned
        else:
            found.problem(done.path, done.error.removeprefix(f"{done.path}: "))
    traces = numbered(read)
    traces.sort(key=lambda t: (t.rank, t.file))
    problems = [Problem(file=x["file"], error=x["error"]) for x in found.problems]  # the scan's and the traces'
    memory = _memory(found.snapshots, problems)
    if not traces and (memory is None or memory.files == []):  # files: snapshots the memory module read
        raise NothingToRead("; ".join(f"{p.file}: {p.error}" for p in problems))
    summary = Summary(
        schema=SCHEMA,
        schema_version=SCHEMA_VERSION,
        inputs=[str(p) for p in paths],
        findings=[],
        traces=traces,
        cross_rank=cross_rank(traces),
        memory=memory,
        problems=problems,
    )
    summary.findings = rank_findings(summary)
    return with_top(summary, top)


def diagnose(paths: Sequence[str | Path], workers: Workers | None = None) -> Diagnosis:
    """The ranked findings of ``summarize(paths)`` (every op and kernel kept, as the rules need),
    with its problems: what ``bridge-plugins diagnose`` prints. Raises as ``summarize`` does."""
    s = summarize(paths, top=None, workers=workers, timelines=False)  # no rule reads them
    return Diagnosis(findings=s.findings, problems=s.problems, traces_read=len(s.traces))


def numbered(read: list[TraceAsRead]) -> list[TraceSummary]:
    """The traces with a rank each: a trace with no rank anywhere gets the lowest free number, in input order."""
    used = {t.rank for t in read}
    next_rank = 0
    out: list[TraceSummary] = []
    for t in read:
        rank = t.rank
        if rank is None:
            while next_rank in used:
                next_rank += 1
            rank = next_rank
            used.add(rank)
        out.append(TraceSummary(**{**{f.name: getattr(t, f.name) for f in dataclasses.fields(t)}, "rank": rank}))
    return out


def with_top(summary: Summary, top: int | None) -> Summary:
    """``summary`` with its op and kernel tables cut to their first ``top`` rows (all for None):
    how ``summarize`` applies ``top``, and how a caller holding a full summary gets a shorter one."""
    if top is None:
        return summary
    traces = [
        dataclasses.replace(
            t, top_cpu_ops=t.top_cpu_ops[:top], top_gpu_kernels=t.top_gpu_kernels[:top], analyses=t.analyses.cut(top)
        )
        for t in summary.traces
    ]
    return dataclasses.replace(summary, traces=traces)


def without_timelines(summary: Summary) -> Summary:
    """``summary`` without the step timelines' bars (``summary --json`` leaves them out unless asked:
    they are most of its size and only the report draws them)."""
    traces = [dataclasses.replace(t, analyses=dataclasses.replace(t.analyses, timelines=[])) for t in summary.traces]
    return dataclasses.replace(summary, traces=traces)

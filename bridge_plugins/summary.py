"""Reading a finished job's profiling artifacts back: steps captured, files per rank, top operators.

Used by the main job (``python -m recipes``) to tell the user what they got. Imports neither
torch nor nemo_run: it only reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Tuple

from bridge_plugins.analysis import NothingToRead, summarize
from bridge_plugins.analysis.job import UNRECOGNISED_TRACE, scan_job_dir
from bridge_plugins.analysis.memory_text import fmt_bytes
from bridge_plugins.analysis.render_summary import step_ranges, to_text
from bridge_plugins.artifact_names import DEFAULT_SNAPSHOT_NAME


@dataclass
class Artifacts:
    """Profiling files found under a job directory, by kind and rank."""

    traces: Dict[int, List[Path]] = field(default_factory=dict)
    memory: Dict[int, List[Path]] = field(default_factory=dict)
    nsys: List[Path] = field(default_factory=list)
    skipped: List[Path] = field(default_factory=list)  # look like traces, but not a name we write


def find_artifacts(job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME) -> Artifacts:
    """Every artifact under ``job_dir`` (the scan of :func:`bridge_plugins.analysis.job.scan_job_dir`), by rank."""
    scanned = scan_job_dir(Path(job_dir), Path(memory_snapshot_path).name)
    found = Artifacts(skipped=scanned.unrecognised)
    for name in scanned.artifacts:
        if name.kind == "torch_trace":
            found.traces.setdefault(name.rank, []).append(name.path)
        elif name.kind in ("memory_snapshot", "oom_snapshot"):
            found.memory.setdefault(name.rank, []).append(name.path)
        elif name.kind == "nsys_report":
            found.nsys.append(name.path)
    return found


def steps_line(steps: Dict[int, List[List[int]]]) -> str:
    """'Steps captured per rank: rank 0: 10-14, rank 1: 10-14'; a rank's windows joined by 'and'."""
    per_rank = []
    for rank, windows in sorted(steps.items()):
        text = " and ".join(step_ranges(w) for w in windows if w)
        if text:
            per_rank.append(f"rank {rank}: {text}")
    return "Steps captured per rank: " + ", ".join(per_rank)


def report(
    job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME, top: int = 10
) -> Tuple[str, Dict[int, List[List[int]]]]:
    """A human-readable summary of a job's artifacts, and the steps captured per rank, one list per
    trace (window): a rank with several windows (on-demand triggers, requeues) keeps them all.

    The figures come from :func:`bridge_plugins.analysis.summarize` (``bridge-plugins summary``);
    a file it cannot read is listed with the reason instead of failing the whole report.
    """
    arts = find_artifacts(job_dir, memory_snapshot_path)
    try:
        summary = summarize([p for paths in arts.traces.values() for p in paths], top=top) if arts.traces else None
    except NothingToRead:
        summary = None
    by_file = {t["file"]: t for t in (summary or {}).get("traces", [])}
    problems = {x["file"]: x["error"] for x in (summary or {}).get("problems", [])}
    lines: List[str] = []
    steps: Dict[int, List[List[int]]] = {}
    for rank in sorted(set(arts.traces) | set(arts.memory)):
        for p in arts.traces.get(rank, []):
            t = by_file.get(str(p))
            if t is None:
                lines.append(f"  rank {rank}: {p}  unreadable: {problems.get(str(p), 'could not be read')}")
                continue
            steps.setdefault(rank, []).append(t["steps"]["captured"])
            lines.append(
                f"  rank {rank}: {p}  ({fmt_bytes(p.stat().st_size)}), "
                f"steps captured: {step_ranges(t['steps']['captured'])}"
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
    if by_file:
        out += ["", to_text(summary).rstrip()]
    return "\n".join(out), steps

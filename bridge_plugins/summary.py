"""Reading a finished job's profiling artifacts back: steps captured, files per rank, top operators.

Used by the main job (``python -m recipes``) to tell the user what they got. Imports neither
torch nor nemo_run: it only reads files.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bridge_plugins import artifact_names
from bridge_plugins.analysis import NothingToRead, summarize
from bridge_plugins.analysis.render_summary import step_ranges, to_text
from bridge_plugins.artifact_names import DEFAULT_SNAPSHOT_NAME
from bridge_plugins.runtime.artifacts import human_size


@dataclass
class Artifacts:
    """Profiling files found under a job directory, by kind and rank."""

    traces: Dict[int, List[Path]] = field(default_factory=dict)
    memory: Dict[int, List[Path]] = field(default_factory=dict)
    nsys: List[Path] = field(default_factory=list)
    skipped: List[Path] = field(default_factory=list)  # look like traces, but not a name we write


def find_artifacts(job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME) -> Artifacts:
    """Every artifact under ``job_dir``, recognised by :func:`bridge_plugins.artifact_names.parse`."""
    found = Artifacts()
    for p in sorted(Path(job_dir).rglob("*")):
        name = artifact_names.parse(p, Path(memory_snapshot_path).name)
        if name is None and p.name.endswith(artifact_names.TORCH_TRACE_SUFFIX) and not p.name.startswith("."):
            found.skipped.append(p)
        if name is None or not p.is_file():
            continue
        if name.kind == "torch_trace":
            found.traces.setdefault(name.rank, []).append(p)
        elif name.kind in ("memory_snapshot", "oom_snapshot"):
            found.memory.setdefault(name.rank, []).append(p)
        elif name.kind == "nsys_report":
            found.nsys.append(p)
    return found


def report(
    job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME, top: int = 10
) -> Tuple[str, Optional[Dict[int, List[int]]]]:
    """A human-readable summary of a job's artifacts, and the steps captured per rank.

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
    steps: Dict[int, List[int]] = {}
    for rank in sorted(set(arts.traces) | set(arts.memory)):
        for p in arts.traces.get(rank, []):
            t = by_file.get(str(p))
            if t is None:
                lines.append(f"  rank {rank}: {p}  unreadable: {problems.get(str(p), 'could not be read')}")
                continue
            steps[rank] = t["steps"]["captured"]
            lines.append(
                f"  rank {rank}: {p}  ({human_size(p.stat().st_size)}), steps captured: {step_ranges(steps[rank])}"
            )
        for p in arts.memory.get(rank, []):
            lines.append(f"  rank {rank}: {p}  ({human_size(p.stat().st_size)}), memory snapshot")
    for p in arts.nsys:
        lines.append(f"  nsys: {p}  ({human_size(p.stat().st_size)})")
    for p in arts.skipped:
        lines.append(f"  skipped {p}: not a trace name bridge-plugins writes (rank<R>_steps<A>-<B>...)")
    if not lines:
        lines.append(f"  (no profiling artifacts under {job_dir})")
    out = ["Artifacts:"] + lines
    if by_file:
        out += ["", to_text(summary).rstrip()]
    return "\n".join(out), steps

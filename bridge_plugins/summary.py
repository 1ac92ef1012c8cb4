"""Reading a finished job's profiling artifacts back: steps captured, files per rank, top operators.

Used by the main job (``python -m recipes``) to tell the user what they got. Imports neither
torch nor nemo_run: it only reads files.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from bridge_plugins import artifact_names
from bridge_plugins.artifact_names import DEFAULT_SNAPSHOT_NAME
from bridge_plugins.runtime.artifacts import human_size

_STEP = re.compile(r"^ProfilerStep#(\d+)$")


def load_trace(path: Path) -> dict:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def steps_in_trace(trace: dict) -> List[int]:
    """Global step numbers of the ProfilerStep#N annotations, sorted."""
    return sorted({int(m.group(1)) for e in trace.get("traceEvents", []) if (m := _STEP.match(str(e.get("name", ""))))})


def top_ops(trace: dict, n: int = 10) -> List[Tuple[str, float, int]]:
    """Operators by total self time (us): (name, self_us, calls), CPU ops and GPU kernels.

    Self time is an event's duration minus the durations of the events nested directly inside
    it on the same thread (Chrome-trace complete events, ``ph == "X"``).
    """
    by_thread: Dict[tuple, list] = defaultdict(list)
    for e in trace.get("traceEvents", []):
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "kernel", "gpu_memcpy", "gpu_memset") and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    self_us: Dict[str, float] = defaultdict(float)
    calls: Dict[str, int] = defaultdict(int)
    for events in by_thread.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: List[list] = []  # [end, name, child_total, dur]
        for e in events:
            while stack and e["ts"] >= stack[-1][0]:
                end, name, child, dur = stack.pop()
                self_us[name] += max(dur - child, 0.0)
            if stack:
                stack[-1][2] += e["dur"]
            stack.append([e["ts"] + e["dur"], e["name"], 0.0, e["dur"]])
            calls[e["name"]] += 1
        for end, name, child, dur in stack:
            self_us[name] += max(dur - child, 0.0)
    ranked = sorted(self_us.items(), key=lambda kv: -kv[1])[:n]
    return [(name, us, calls[name]) for name, us in ranked]


@dataclass
class Artifacts:
    """Profiling files found under a job directory, by kind and rank."""

    traces: Dict[int, List[Path]] = field(default_factory=dict)
    memory: Dict[int, List[Path]] = field(default_factory=dict)
    nsys: List[Path] = field(default_factory=list)


def find_artifacts(job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME) -> Artifacts:
    """Every artifact under ``job_dir``, recognised by :func:`bridge_plugins.artifact_names.parse`."""
    found = Artifacts()
    for p in sorted(Path(job_dir).rglob("*")):
        name = artifact_names.parse(p, Path(memory_snapshot_path).name)
        if name is None or not p.is_file():
            continue
        if name.kind == "torch_trace":
            found.traces.setdefault(name.rank, []).append(p)
        elif name.kind in ("memory_snapshot", "oom_snapshot"):
            found.memory.setdefault(name.rank, []).append(p)
        elif name.kind == "nsys_report":
            found.nsys.append(p)
    return found


def report(job_dir: Path, memory_snapshot_path: str = DEFAULT_SNAPSHOT_NAME, top: int = 10) -> Tuple[str, Optional[Dict[int, List[int]]]]:
    """A human-readable summary of a job's artifacts, and the steps captured per rank."""
    arts = find_artifacts(job_dir, memory_snapshot_path)
    lines: List[str] = []
    steps: Dict[int, List[int]] = {}
    first_trace = None
    for rank in sorted(set(arts.traces) | set(arts.memory)):
        for p in arts.traces.get(rank, []):
            trace = load_trace(p)
            steps[rank] = steps_in_trace(trace)
            first_trace = first_trace or trace
            lines.append(f"  rank {rank}: {p}  ({human_size(p.stat().st_size)}), steps captured: {_ranges(steps[rank])}")
        for p in arts.memory.get(rank, []):
            lines.append(f"  rank {rank}: {p}  ({human_size(p.stat().st_size)}), memory snapshot")
    for p in arts.nsys:
        lines.append(f"  nsys: {p}  ({human_size(p.stat().st_size)})")
    if not lines:
        lines.append(f"  (no profiling artifacts under {job_dir})")
    out = ["Artifacts:"] + lines
    if first_trace is not None:
        rank0 = min(arts.traces)
        out += ["", f"Top operators by self time (rank {rank0}, all captured steps):"]
        out += [f"  {us / 1000:9.2f} ms  {n:6d} calls  {name}" for name, us, n in top_ops(first_trace, top)]
    out += ["", "How to open them:"]
    if arts.traces:
        tdir = next(iter(arts.traces.values()))[0].parent
        out += [
            "  Perfetto UI: open https://ui.perfetto.dev and drag a .pt.trace.json.gz file onto it.",
            f"  TensorBoard: pip install tensorboard torch-tb-profiler; tensorboard --logdir {tdir.parent}",
            "              (the PYTORCH_PROFILER tab lists each rank's trace as a worker)",
        ]
    if arts.memory:
        out.append("  Memory snapshots: open https://pytorch.org/memory_viz and drop a .pickle file onto it.")
    if arts.nsys:
        out.append("  nsys reports: nsys-ui <file>.nsys-rep, or nsys stats <file>.nsys-rep")
    return "\n".join(out), steps


def _ranges(steps: List[int]) -> str:
    if not steps:
        return "none"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]}-{steps[-1]}" if len(steps) > 1 else str(steps[0])
    return ",".join(map(str, steps))

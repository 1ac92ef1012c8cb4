"""Every artifact name, built and parsed in one place.

The job side (``runtime/``) builds names with the ``*_stem`` functions; readers (the analysis
CLI, the main job's summary, tests) recognise files with :func:`parse`. Nothing else formats or
re-parses a name by hand, so a change of layout is one edit here. The layout: docs/formats.md.
Imports nothing beyond the standard library.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

TORCH_TRACE_DIR = "torch_profile"
"""Subdirectory of output_dir for PyTorch profiler traces (and Chakra execution traces)."""
TORCH_TRACE_SUFFIX = ".pt.trace.json.gz"
"""Gzip Chrome trace; Perfetto and TensorBoard's profiler plugin list files ending so."""
CHAKRA_TRACE_SUFFIX = ".chakra.json"
"""torch.profiler.ExecutionTraceObserver output (MLCommons Chakra execution trace)."""
DEFAULT_SNAPSHOT_NAME = "memory_snapshot.pickle"
"""ProfilingConfig.memory_snapshot_path's default file name."""
NSYS_DIR = "nsys_profile"
"""NeMo Run's default nsys folder under the job directory."""
NSYS_LOCAL_FILENAME = "profile_%p"
"""NeMo Run's default nsys file name (``%p``: the wrapped process id)."""
NSYS_SLURM_FILENAME = "profile_%p_%q{SLURM_JOB_ID}_node%q{SLURM_NODEID}_rank%q{SLURM_PROCID}"
"""On Slurm: unique per job, node and task, so nodes never overwrite each other's reports."""
NSYS_SUFFIXES = (".nsys-rep", ".qdrep", ".qdstrm")
JOB_REPORT_NAME = "profile_report.html"
"""The offline HTML report the main job (``python -m recipes``) writes in the job directory."""
NSYS_STEP_RANGE = "ProfilerStep#{step}"
"""The NVTX range text the job pushes around each window step under nsys (global step number),
the same text as the PyTorch profiler's step annotations: a reader takes step numbers from it."""
NSYS_WINDOW_RANGE = "bridge_plugins.window"
"""The NVTX range the job pushes around the whole window under nsys; on a node without a GPU the
nsys launch wrapper captures exactly this range (``--capture-range=nvtx``)."""

_TAGS = r"(?P<tags>(?:_(?:trigger|requeue|restart)\d+)*)(?:\.(?P<dup>\d+))?"
_TRACE_RE = re.compile(r"^rank(?P<rank>\d+)_steps(?P<first>\d+)-(?P<last>\d+)" + _TAGS + r"$")
_SNAP_RE = re.compile(r"^(?P<stem>.+?)_(?P<oom>oom_rank)?(?P<rank>\d+)" + _TAGS + r"$")
_NSYS_RE = re.compile(r"^profile_(?P<pid>\d+)(?:_(?P<job>\d+)_node(?P<node>\d+)_rank(?P<rank>\d+))?")
_TAG_RE = re.compile(r"_(trigger|requeue|restart)(\d+)")


def _int_env(environ: Mapping[str, str], key: str) -> int:
    """A non-negative counter from the environment; anything else (``abc``, ``-1``) counts as 0."""
    raw = environ.get(key, "").strip()
    return int(raw) if raw.isdigit() else 0


def restart_tag(environ: Mapping[str, str] | None = None) -> str:
    """``_requeue<N>_restart<M>`` for a restarted attempt, '' on the first one.

    Slurm requeues count in SLURM_RESTART_COUNT; torchelastic (torchrun, ft_launcher) in-job
    restarts in TORCHELASTIC_RESTART_COUNT. A malformed counter is ignored, never fatal.
    """
    environ = os.environ if environ is None else environ
    requeue = _int_env(environ, "SLURM_RESTART_COUNT")
    restart = _int_env(environ, "TORCHELASTIC_RESTART_COUNT")
    return (f"_requeue{requeue}" if requeue else "") + (f"_restart{restart}" if restart else "")


def _tags(trigger: int | None, environ: Mapping[str, str] | None) -> str:
    return (f"_trigger{trigger}" if trigger is not None else "") + restart_tag(environ)


def torch_trace_stem(
    rank: int, first: int, last: int, trigger: int | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Stem of a PyTorch trace (add TORCH_TRACE_SUFFIX, or CHAKRA_TRACE_SUFFIX)."""
    return f"rank{rank}_steps{first}-{last}{_tags(trigger, environ)}"


def split_suffix(name: str, suffix: str | None = None) -> tuple:
    """Split ``name`` into (stem, suffix); ``suffix`` forces a compound one like '.pt.trace.json.gz'."""
    if suffix and name.endswith(suffix):
        return name[: -len(suffix)], suffix
    p = Path(name)
    return (p.name[: -len(p.suffix)] if p.suffix else p.name), p.suffix


def snapshot_stem(
    base_stem: str, rank: int, trigger: int | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Stem of the window's memory snapshot: ``<base>_<rank>`` (Megatron Bridge's naming)."""
    return f"{base_stem}_{rank}{_tags(trigger, environ)}"


def oom_snapshot_stem(base_stem: str, rank: int, environ: Mapping[str, str] | None = None) -> str:
    """Stem of the snapshot dumped on an out-of-memory error."""
    return f"{base_stem}_oom_rank{rank}{restart_tag(environ)}"


@dataclass(frozen=True)
class ArtifactName:
    """What a file name says. ``kind`` is one of 'torch_trace', 'chakra_trace',
    'memory_snapshot', 'oom_snapshot', 'nsys_report'. Fields a kind lacks are None."""

    kind: str
    path: Path
    rank: int | None = None
    first_step: int | None = None
    last_step: int | None = None
    trigger: int | None = None
    requeue: int = 0
    restart: int = 0
    duplicate: int = 0
    node: int | None = None
    job_id: str | None = None


def _tag_values(tags: str) -> dict:
    values = {k: int(v) for k, v in _TAG_RE.findall(tags or "")}
    return {"trigger": values.get("trigger"), "requeue": values.get("requeue", 0), "restart": values.get("restart", 0)}


def parse(path: str | Path, snapshot_name: str = DEFAULT_SNAPSHOT_NAME) -> ArtifactName | None:
    """Recognise one of our artifacts by its file name, or return None.

    ``snapshot_name`` is the configured memory_snapshot_path's file name (only its stem and
    suffix matter); with the default, any ``<stem>_<rank>.pickle`` is taken as a snapshot.
    """
    path = Path(path)
    name = path.name
    if name.startswith("."):
        return None  # temporary files of the writer
    for suffix, kind in ((TORCH_TRACE_SUFFIX, "torch_trace"), (CHAKRA_TRACE_SUFFIX, "chakra_trace")):
        if name.endswith(suffix):
            m = _TRACE_RE.match(name[: -len(suffix)])
            if not m:
                return None
            return ArtifactName(
                kind,
                path,
                rank=int(m["rank"]),
                first_step=int(m["first"]),
                last_step=int(m["last"]),
                duplicate=int(m["dup"] or 0),
                **_tag_values(m["tags"]),
            )
    for suffix in NSYS_SUFFIXES:
        if name.endswith(suffix):
            m = _NSYS_RE.match(name)
            return ArtifactName(
                "nsys_report",
                path,
                rank=int(m["rank"]) if m and m["rank"] else None,
                node=int(m["node"]) if m and m["node"] else None,
                job_id=m["job"] if m else None,
            )
    base_stem, base_suffix = split_suffix(Path(snapshot_name).name)
    if base_suffix and name.endswith(base_suffix):
        m = _SNAP_RE.match(name[: -len(base_suffix)])
        if m and (m["stem"] == base_stem or snapshot_name == DEFAULT_SNAPSHOT_NAME):
            kind = "oom_snapshot" if m["oom"] else "memory_snapshot"
            values = _tag_values(m["tags"])
            return ArtifactName(kind, path, rank=int(m["rank"]), duplicate=int(m["dup"] or 0), **values)
    return None

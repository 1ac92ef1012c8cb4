"""Which files to read: a job directory's artifacts (by :mod:`bridge_plugins.jobdir.names`) or files named.

:func:`scan_job_dir` is the one scan of a job directory: our names are recognised, trace-like
files we did not name are read when they are Chrome traces (torch's ``*.pt.trace.json[.gz]``, or a
``traceEvents`` key near the start) and reported otherwise, dot-names and hidden (staging) directories are skipped.
:func:`find_artifacts` groups it by kind and rank for the main job; :func:`find_inputs` sorts the
paths a reader was given (``*.json``/``*.json.gz`` traces, ``*.pickle``/``*.pkl`` snapshots, and
the files of any other trace format the caller's ``knows`` claims: analysis.formats, e.g. nsys reports).
"""

from __future__ import annotations

import gzip
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bridge_plugins.config.errors import BridgePluginsError
from bridge_plugins.jobdir import names as artifact_names
from bridge_plugins.jobdir.regular_file import NotARegularFile, open_regular

_TRACE_ENDINGS = (".json", ".json.gz")
UNRECOGNISED_TRACE = "not a trace name bridge-plugins writes (rank<R>_steps<A>-<B>...); name the file itself to read it"
_SNAPSHOT_ENDINGS = (".pickle", ".pkl")
SNIFF_BYTES = 1 << 20  # Kineto writes its header (device properties...) before traceEvents: well under this
NOT_A_TRACE = "not a Chrome trace (no traceEvents key near the start)"


class NothingToRead(BridgePluginsError):
    """No input could be read at all: ``str(e)`` is the one-line reason."""


@dataclass
class Inputs:
    """Traces and snapshots to read, and a one-line problem per file or path that was skipped."""

    traces: list[Path] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    problems: list[dict[str, str]] = field(default_factory=list)

    def problem(self, path: str | Path, error: str) -> None:
        self.problems.append({"file": str(path), "error": error})


@dataclass
class JobFiles:
    """A job directory's files: artifacts by their parsed names, and trace-like files we did not name."""

    artifacts: list[artifact_names.ArtifactName] = field(default_factory=list)
    unrecognised: list[Path] = field(default_factory=list)  # *.pt.trace.json[.gz] not named by us (torch's names)
    other_json: list[Path] = field(default_factory=list)  # any other .json[.gz]: a Chrome trace or not
    other: list[Path] = field(default_factory=list)  # every other file (a reader of another format may claim it)


def scan_job_dir(job_dir: Path, snapshot_name: str = artifact_names.DEFAULT_SNAPSHOT_NAME) -> JobFiles:
    """Every regular file under ``job_dir`` (in path order), skipping dot-names and hidden directories."""
    paths = []
    for root, dirs, files in os.walk(job_dir):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        paths += [Path(root, f) for f in files if not f.startswith(".")]
    found = JobFiles()
    for p in sorted(paths):
        if not p.is_file():
            continue
        name = artifact_names.parse(p, snapshot_name)
        if name is not None:
            found.artifacts.append(name)
        elif p.name.endswith((artifact_names.TORCH_TRACE_SUFFIX, ".pt.trace.json")):  # also an uncompressed one
            found.unrecognised.append(p)
        elif p.name.endswith(_TRACE_ENDINGS):
            found.other_json.append(p)
        else:
            found.other.append(p)
    return found


def looks_like_chrome_trace(path: Path) -> bool:
    """Whether the file's first SNIFF_BYTES (decompressed) hold a JSON object with a traceEvents key."""
    try:
        with open_regular(path) as raw:
            fh = gzip.GzipFile(fileobj=raw) if path.name.endswith(".gz") else raw
            head = fh.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error, NotARegularFile):
        return False
    return head.lstrip()[:1] == b"{" and b'"traceEvents"' in head


Knows = Callable[[Path], bool]
"""Whether a reader of another trace format claims a file (analysis.formats.knows)."""


def _claimed(paths: list[Path], knows: Knows | None) -> list[Path]:
    """The files ``knows`` claims, less a report whose SQLite export lies beside it (``x.nsys-rep``
    and ``x.sqlite``, as ``nsys export`` writes it): one capture is read once, from the export."""
    claimed = [p for p in paths if knows is not None and knows(p)]
    exports = {p.with_suffix("") for p in claimed if p.suffix == ".sqlite"}
    return [p for p in claimed if p.suffix == ".sqlite" or p.with_suffix("") not in exports]


def _from_directory(job_dir: Path, found: Inputs, knows: Knows | None = None) -> None:
    before = len(found.traces) + len(found.snapshots)
    scanned = scan_job_dir(job_dir)
    nsys_reports = [name.path for name in scanned.artifacts if name.kind == "nsys_report"]
    for name in scanned.artifacts:
        if name.kind == "torch_trace":
            found.traces.append(name.path)
        elif name.kind in ("memory_snapshot", "oom_snapshot"):
            found.snapshots.append(name.path)
    found.traces += scanned.unrecognised  # torch's own names: the rank comes from distributedInfo
    for p in scanned.other_json:
        if looks_like_chrome_trace(p):
            found.traces.append(p)
        else:
            found.problem(p, NOT_A_TRACE)
    found.traces += _claimed(sorted(nsys_reports + scanned.other), knows)
    if len(found.traces) + len(found.snapshots) == before:
        found.problem(
            job_dir,
            "no profiling artifacts (traces or memory snapshots) in this directory; to read files named otherwise, "
            f"name the files (e.g. {job_dir}/*.json.gz)",
        )


def find_inputs(paths: Sequence[str | Path], knows: Knows | None = None) -> Inputs:
    """Sort job directories and files into traces and snapshots; ``knows`` claims the files of other
    trace formats (analysis.formats.knows). Raises NothingToRead if none."""
    found = Inputs()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            _from_directory(p, found, knows)
        elif not p.exists():
            found.problem(p, "no such file or directory")
        elif not p.is_file():  # a FIFO or device would block the read forever
            found.problem(p, "not a regular file")
        elif getattr(artifact_names.parse(p), "kind", None) == "chakra_trace":
            found.problem(p, "a Chakra execution trace (operator graph), not a Chrome trace with times")
        elif p.name.endswith(_TRACE_ENDINGS):
            found.traces.append(p)
        elif p.name.endswith(_SNAPSHOT_ENDINGS):
            found.snapshots.append(p)
        elif knows is not None and knows(p):
            found.traces.append(p)
        elif knows is not None:
            found.problem(p, "not a trace (.json, .json.gz, nsys .nsys-rep or .sqlite) or a memory snapshot (.pickle)")
        else:
            found.problem(p, "not a trace (.json, .json.gz) or a memory snapshot (.pickle)")
    found.traces = list(dict.fromkeys(found.traces))  # a file named twice (or in a directory also named) counts once
    found.snapshots = list(dict.fromkeys(found.snapshots))
    if not found.traces and not found.snapshots:
        raise NothingToRead("; ".join(f"{x['file']}: {x['error']}" for x in found.problems) or "no input given")
    return found


def rank_from_name(path: Path) -> int | None:
    """The rank in one of our trace names, or None."""
    name = artifact_names.parse(path)
    return name.rank if name is not None and name.kind == "torch_trace" else None


@dataclass
class Artifacts:
    """Profiling files found under a job directory, by kind and rank."""

    traces: dict[int, list[Path]] = field(default_factory=dict)
    memory: dict[int, list[Path]] = field(default_factory=dict)
    nsys: list[Path] = field(default_factory=list)
    skipped: list[Path] = field(default_factory=list)  # look like traces, but not a name we write


def find_artifacts(job_dir: Path, memory_snapshot_path: str = artifact_names.DEFAULT_SNAPSHOT_NAME) -> Artifacts:
    """Every artifact under ``job_dir`` (the scan of :func:`bridge_plugins.jobdir.scan.scan_job_dir`), by rank."""
    scanned = scan_job_dir(Path(job_dir), Path(memory_snapshot_path).name)
    found = Artifacts(skipped=scanned.unrecognised)
    for name in scanned.artifacts:
        if name.kind == "nsys_report":
            found.nsys.append(name.path)
        elif name.rank is None:  # every other kind's name carries the rank
            continue
        elif name.kind == "torch_trace":
            found.traces.setdefault(name.rank, []).append(name.path)
        elif name.kind in ("memory_snapshot", "oom_snapshot"):
            found.memory.setdefault(name.rank, []).append(name.path)
    return found

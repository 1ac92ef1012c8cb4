"""The trace formats the analysis reads: one reader per format, found by file name, in one registry.

A reader is a function ``Path -> TraceAsRead`` (schema.py) that raises ``TraceError`` for a file
it cannot read; ``timelines=False`` asks it to leave the step timelines out (only the report draws them). Adding a format means one reader module and one line in ``FORMATS``; the job
directory scan (jobdir.scan.find_inputs) asks :func:`knows` which files are traces, and
``summarize`` reads each with :func:`read`. Readers are imported on first use, so a command that
reads only PyTorch traces never imports the nsys reader.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from bridge_plugins.analysis.schema import TraceAsRead
from bridge_plugins.analysis.trace.reader import TraceError


class Reader(Protocol):
    def __call__(self, path: Path, /, *, timelines: bool = True) -> TraceAsRead: ...


@dataclass(frozen=True)
class TraceFormat:
    """A format: its name (``format`` in the summary), the file name endings it claims, its reader
    ('module:function', imported on first use)."""

    name: str
    endings: tuple[str, ...]
    reader: str

    def load(self) -> Reader:
        module, function = self.reader.split(":")
        return getattr(importlib.import_module(module), function)


FORMATS = (
    TraceFormat("chrome-trace", (".json", ".json.gz"), "bridge_plugins.analysis.chrome:summarize_trace"),
    TraceFormat("nsys-sqlite", (".sqlite",), "bridge_plugins.analysis.nsys.as_trace:summarize_export"),
    TraceFormat("nsys-rep", (".nsys-rep", ".qdrep", ".qdstrm"), "bridge_plugins.analysis.nsys.export:summarize_report"),
)


def format_of(path: Path) -> TraceFormat | None:
    """The format whose endings ``path``'s name has, or None."""
    name = Path(path).name
    return next((f for f in FORMATS if name.endswith(f.endings)), None)


def knows(path: Path) -> bool:
    """Whether a reader claims ``path`` (what the job directory scan asks)."""
    return format_of(path) is not None


def read(path: Path, timelines: bool = True) -> TraceAsRead:
    """The trace entry of ``path`` by its format's reader (a picklable function, for worker processes)."""
    fmt = format_of(path)
    if fmt is None:
        raise TraceError(f"{path}: not a trace format the analysis reads ({', '.join(f.name for f in FORMATS)})")
    return fmt.load()(Path(path), timelines=timelines)


def read_without_timelines(path: Path) -> TraceAsRead:
    """:func:`read` with no step timelines (picklable, as ``map`` needs)."""
    return read(path, timelines=False)

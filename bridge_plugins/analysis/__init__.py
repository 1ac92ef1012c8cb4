"""Readers of a job's profiling artifacts (``summary``, ``diagnose``, ``compare``, ``memory``,
``report``); never torch or nemo_run: analysis runs on a login node with only the files.

``__all__`` is the front door, resolved on first use (no reader is imported until one is asked
for). No name there is a submodule's: ``summarize`` stays the module (its function is
``analysis.summarize.summarize``); where a function's own name says too little at this level it is
named for what it makes (``build_report`` is ``report.html.build``): docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bridge_plugins.analysis.compare import compare_runs
    from bridge_plugins.analysis.findings.run import rank_findings
    from bridge_plugins.analysis.memory.snapshot import snapshot_figures
    from bridge_plugins.analysis.report.html import build as build_report
    from bridge_plugins.analysis.report.html import render as render_report
    from bridge_plugins.analysis.report.html import write_report
    from bridge_plugins.analysis.summarize import with_top
    from bridge_plugins.analysis.text.job import report as job_report
    from bridge_plugins.analysis.text.job import steps_line

FRONT_DOOR = {
    "with_top": ("bridge_plugins.analysis.summarize", "with_top"),
    "rank_findings": ("bridge_plugins.analysis.findings.run", "rank_findings"),
    "compare_runs": ("bridge_plugins.analysis.compare", "compare_runs"),
    "snapshot_figures": ("bridge_plugins.analysis.memory.snapshot", "snapshot_figures"),
    "build_report": ("bridge_plugins.analysis.report.html", "build"),
    "render_report": ("bridge_plugins.analysis.report.html", "render"),
    "write_report": ("bridge_plugins.analysis.report.html", "write_report"),
    "job_report": ("bridge_plugins.analysis.text.job", "report"),
    "steps_line": ("bridge_plugins.analysis.text.job", "steps_line"),
}
"""Each front-door name: (the module that defines it, its name there)."""

__all__ = [
    "with_top",
    "rank_findings",
    "compare_runs",
    "snapshot_figures",
    "build_report",
    "render_report",
    "write_report",
    "job_report",
    "steps_line",
]


def __getattr__(name: str) -> Any:
    """A front-door name, imported on first use (an eager import would load every reader, and
    ``report.html`` imports ``summarize``, which imports this package: a cycle)."""
    where = FRONT_DOOR.get(name)
    if where is None:
        raise AttributeError(f"module 'bridge_plugins.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

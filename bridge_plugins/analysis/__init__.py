"""Readers of a job's profiling artifacts (``summary``, ``diagnose``, ``compare``, ``memory``,
``report``); never torch or nemo_run: analysis runs on a login node with only the files.

``__all__`` is the front door, resolved on first use (no reader is imported until one is asked
for). No name there is a submodule's (``summarize`` and ``diagnose`` are ``pipeline``'s); where a
function's own name says too little at this level it is named for what it makes (``build_report``
is ``page.build``). The floors below it (readers, analyzers, findings, renderers) are in
docs/architecture.md and pyproject.toml.
"""

from __future__ import annotations

import importlib
from typing import Any

FRONT_DOOR = {
    "summarize": ("bridge_plugins.analysis.pipeline", "summarize"),
    "diagnose": ("bridge_plugins.analysis.pipeline", "diagnose"),
    "with_top": ("bridge_plugins.analysis.pipeline", "with_top"),
    "rank_findings": ("bridge_plugins.analysis.findings.run", "rank_findings"),
    "compare_runs": ("bridge_plugins.analysis.run_compare", "compare_runs"),
    "snapshot_figures": ("bridge_plugins.analysis.memory.snapshot", "snapshot_figures"),
    "build_report": ("bridge_plugins.analysis.page", "build"),
    "render_report": ("bridge_plugins.analysis.report.html", "render"),
    "write_report": ("bridge_plugins.analysis.report.html", "write_report"),
    "job_report": ("bridge_plugins.analysis.job", "report"),
    "steps_line": ("bridge_plugins.analysis.job", "steps_line"),
}
"""Each front-door name: (the module that defines it, its name there)."""

__all__ = [
    "summarize",
    "diagnose",
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
    """A front-door name, imported on first use: an eager import would load every reader (numpy,
    rich) for any module of the package, such as the CLI's parser or the error classes."""
    where = FRONT_DOOR.get(name)
    if where is None:
        raise AttributeError(f"module 'bridge_plugins.analysis' has no attribute {name!r}")
    value = getattr(importlib.import_module(where[0]), where[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))

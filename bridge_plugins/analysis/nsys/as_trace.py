"""One Nsight Systems export as a trace of the summary (schema.TraceAsRead), like a PyTorch trace.

The same fields, from the export's tables: steps from NVTX step ranges, the GPU split and kernel
table from the kernel, memcpy and memset tables, CUDA API calls in ``top_cpu_ops`` (an export has
no operators), the launch statistics, synchronizations and per-step details under ``analyses``;
plus ``format`` and ``nsys`` (the ``nsys stats`` tables and CUPTI's synchronization records).
Figures that need PyTorch's operators or per-stream idle attribution are None, and the analyses'
``note`` says so. Fields: docs/analysis-schema.md; what maps to what: docs/nsys-reports.md.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
from pathlib import Path

from bridge_plugins.analysis.analyzers.all import TraceAnalyses
from bridge_plugins.analysis.analyzers.gemm_precision import gemm_precision
from bridge_plugins.analysis.analyzers.step_stats import step_stats
from bridge_plugins.analysis.figures import NsysReport, OpRow, StepRow
from bridge_plugins.analysis.nsys import copies, gpu, launch_links, step_ranges
from bridge_plugins.analysis.nsys.db import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, Export, open_export, sql_errors
from bridge_plugins.analysis.nsys.launch_links import calls_once
from bridge_plugins.analysis.nsys.stats_reports import api_name, nsys_stats
from bridge_plugins.analysis.schema import TraceAsRead
from bridge_plugins.jobdir.scan import rank_from_name

FORMAT = "nsys-sqlite"
BIG_BYTES = 100 * 1024 * 1024  # exports from this size on show their phases on a terminal


NOTE = (
    "Nsight Systems report: no PyTorch operators, so no per-stream idle causes, queue lengths, "
    "copy bandwidth, module attribution or step timelines; GPU figures cover every GPU in the report"
)


def api_rows(export: Export) -> list[OpRow]:
    """CUDA API calls by name, each call once (launch_links.calls_once), as the CPU table."""
    if not export.has(RUNTIME, "nameId"):
        return []
    sums = list(export.conn.execute(f"SELECT nameId, total(dur), count(*) FROM ({calls_once(export)}) GROUP BY nameId"))
    names = export.names([r[0] for r in sums])
    rows: dict[str, list[float]] = {}
    for name_id, total, n in sums:
        row = rows.setdefault(api_name(names[name_id]), [0.0, 0])
        row[0] += total / 1e3
        row[1] += n
    out = [OpRow(name=n, self_us=t, total_us=t, calls=int(c)) for n, (t, c) in rows.items()]
    return sorted(out, key=lambda r: (-r.self_us, r.name))


def _rank(path: Path, export: Export) -> tuple[int | None, str]:
    rank = rank_from_name(path)
    return (rank, "file name") if rank is not None else (None, "none (numbered in input order)")


def summarize_export(path: Path, shown_as: Path | None = None, *, timelines: bool = True) -> TraceAsRead:
    """The trace entry of the export at ``path`` (``shown_as``: the file the user named, e.g. the
    ``.nsys-rep`` it was exported from; ``timelines``: none are drawn from a report either way).
    Raises TraceError for a file that is not a readable export."""
    shown = Path(shown_as or path)
    export = open_export(path, shown)
    try:
        return _summary(export, shown)
    except sqlite3.Error as e:
        raise sql_errors(shown, e) from None
    finally:
        export.close()


def _phase(shown: Path, what: str, big: bool) -> None:
    """A progress line on a terminal while a large export is read (it takes minutes per GB)."""
    if big and sys.stderr.isatty():
        sys.stderr.write(f"\rbridge-plugins: {shown.name}: {what}\x1b[K")
        sys.stderr.flush()


def _step_row(step: int, time_us: float) -> StepRow:
    """A ``per_step`` row: an nsys report has no CPU operators to split the step by (breakdown null)."""
    return StepRow(step=step, time_us=time_us, gpu_idle_share=None, breakdown=None, input_wait_us=0.0, input_span=None)


def _summary(export: Export, shown: Path) -> TraceAsRead:
    big = export.path.stat().st_size > BIG_BYTES
    _phase(shown, "GPU time split", big)
    types = gpu.classify_kernels(export)
    figures = gpu.gpu_figures(export)
    _phase(shown, "launches", big)
    launch_links.build_launch_table(export)
    found = step_ranges.nvtx_steps(export)
    syncs = step_ranges.sync_points(export, found)
    details = step_ranges.step_details(export, found, syncs.per_step)
    launch_figures = launch_links.launch_stats(export)
    _phase(shown, "nsys stats tables", big)
    stats = nsys_stats(export)
    _phase(shown, "kernel table", big)
    analyses = TraceAnalyses(
        overlap=gpu.overlap(figures) if figures else None,
        idle=None,
        launches=launch_figures,
        queue=None,
        bandwidth=copies.memory_copies(export),
        kernels=None,
        attribution=None,
        syncs=syncs,
        steps=details,
        timelines=[],
        note=NOTE,
    )
    top_kernels = gpu.kernel_rows(export, types)
    _phase(shown, "done", big)
    if big and sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
    rank, source = _rank(shown, export)
    step_figures = step_stats({n: (e - s) / 1e3 for n, (s, e) in found.items()})
    if not found:
        step_figures = dataclasses.replace(step_figures, note=step_ranges.NO_NVTX_STEPS)
    return TraceAsRead(
        file=str(shown),
        rank=rank,
        rank_source=source,
        world_size=None,
        events=sum(export.rows(t) for t in (KERNEL, MEMCPY, MEMSET, RUNTIME, NVTX)),
        steps=step_figures,
        per_step=[_step_row(d.step, d.duration_us) for d in details],
        gpu=gpu.breakdown(figures) if figures else None,
        top_cpu_ops=api_rows(export),
        top_gpu_kernels=top_kernels,
        precision=gemm_precision(gpu.device_header(export), top_kernels),
        analyses=analyses,
        format=FORMAT,
        nsys=NsysReport(
            version=export.version,
            export_schema_version=export.schema_version,
            stats=stats,
            cupti_synchronizations=step_ranges.cupti_synchronizations(export),
        ),
    )

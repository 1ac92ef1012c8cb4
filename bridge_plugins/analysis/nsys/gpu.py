"""An export's GPU time split and its kernel table, with the definitions used for PyTorch traces.

Kernels get HolisticTraceAnalysis's kernel types from their demangled names
(``kernel_types.kernel_type``: NCCL kernels are communication); every row of the memcpy and
memset tables is memory. Unions of intervals come from one pass over every GPU activity ordered by
start: a row adds ``end - max(start, latest end before it)`` when positive, per union, a block of
rows at a time in numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.overlap import Overlap
from bridge_plugins.analysis.figures import GpuBreakdown, KernelRow
from bridge_plugins.analysis.nsys.db import KERNEL, MEMCPY, MEMSET, Export
from bridge_plugins.analysis.nsys.stats_reports import FETCH, MEMSET_NAME, copy_kind_name
from bridge_plugins.analysis.trace.kernel_types import COMMUNICATION, COMPUTATION, MEMORY, kernel_type

# the kind codes of the GPU activity view
CODES = {COMPUTATION: 1, COMMUNICATION: 2, MEMORY: 4}
OTHER_CODE = 3  # HTA's non-compute kernels that are neither (names with Sync, ...)
NO_COMMUNICATION = "no communication kernels in this report: nothing to overlap"


@dataclass
class GpuFigures:
    """The sums the breakdown and the overlap are made of (us), and the GPU activity count."""

    events: int
    first_ns: int
    span_us: float
    busy_us: float
    computation_us: float
    not_memory_us: float
    communication_us: float
    comp_or_comm_us: float


def classify_kernels(export: Export) -> dict[int | str, str]:
    """Each kernel name id to its kernel type, kept in a temporary table for the GPU queries."""
    if not export.has(KERNEL, "demangledName"):
        return {}
    ids = [r[0] for r in export.conn.execute(f"SELECT DISTINCT demangledName FROM {KERNEL}")]
    names = export.names(ids)
    types = {i: kernel_type(names[i]) for i in ids}
    export.conn.execute("CREATE TEMP TABLE IF NOT EXISTS kernel_types(id PRIMARY KEY, code INTEGER)")
    export.conn.execute("DELETE FROM temp.kernel_types")
    export.conn.executemany(
        "INSERT INTO temp.kernel_types VALUES (?, ?)", ((i, CODES.get(t, OTHER_CODE)) for i, t in types.items())
    )
    return types


def activity_sql(export: Export) -> str | None:
    """A SELECT of ``start, end, code`` over every kernel, copy and memset, or None without any."""
    parts = []
    if export.has(KERNEL, "demangledName"):
        parts.append(
            f"SELECT k.start, k.end, coalesce((SELECT code FROM temp.kernel_types WHERE id = k.demangledName), 1) AS code "
            f"FROM {KERNEL} k"
        )
    parts += [f"SELECT start, end, {CODES[MEMORY]} FROM {t}" for t in (MEMCPY, MEMSET) if export.has(t)]
    return " UNION ALL ".join(parts) or None


UNIONS = {  # the kind codes each union covers, in GpuFigures' order
    "busy": (1, 2, 3, 4),
    "computation": (1,),
    "not_memory": (1, 2, 3),
    "communication": (2,),
    "comp_or_comm": (1, 2),
}


class _Union:
    """The length of a union of intervals fed in order of start, a block at a time (numpy)."""

    def __init__(self) -> None:
        self.latest, self.length = -(1 << 62), 0

    def add(self, starts: np.ndarray, ends: np.ndarray) -> None:
        if len(starts) == 0:
            return
        before = np.maximum.accumulate(np.concatenate(([self.latest], ends)))  # latest end before each row
        # a row adds end - max(start, latest end before it) when that is positive
        self.length += int(np.maximum(ends - np.maximum(starts, before[:-1]), 0).sum())
        self.latest = int(before[-1])


def gpu_figures(export: Export) -> GpuFigures | None:
    """The union sums of the GPU activity (None for an export without any): one cursor ordered by
    start, sorted by SQLite (spilling to disk), taken a block of rows at a time into numpy."""
    source = activity_sql(export)
    if source is None:
        return None
    cur = export.conn.execute(f"SELECT start, end, code FROM ({source}) ORDER BY start, end")
    unions = {name: _Union() for name in UNIONS}
    n, first = 0, None
    for rows in iter(lambda: cur.fetchmany(FETCH), []):
        block = np.array(rows, dtype=np.int64)
        first = int(block[0, 0]) if first is None else first
        n += len(block)
        for name, codes in UNIONS.items():
            rows_of = block if len(codes) == 4 else block[np.isin(block[:, 2], codes)]
            unions[name].add(rows_of[:, 0], rows_of[:, 1])
    if not n or first is None:
        return None
    busy, comp, notmem, comm, cc = (unions[name].length / 1e3 for name in UNIONS)
    return GpuFigures(n, first, (unions["busy"].latest - first) / 1e3, busy, comp, notmem, comm, cc)


def breakdown(f: GpuFigures) -> GpuBreakdown:
    """The summary's ``gpu`` entry (schema.GpuBreakdown), as gpu_breakdown.breakdown defines it."""
    return GpuBreakdown(
        span_us=f.span_us,
        computation_us=f.computation_us,
        communication_us=f.not_memory_us - f.computation_us,
        memory_us=f.busy_us - f.not_memory_us,
        idle_us=f.span_us - f.busy_us,
        communication_total_us=f.communication_us,
        gpu_events=f.events,
        gpu_events_dropped=0,
    )


def overlap(f: GpuFigures) -> Overlap:
    """HTA's communication/computation overlap from the unions: |comm ∩ comp| = |comm| + |comp| - |comm ∪ comp|."""
    if f.communication_us == 0:
        return Overlap(0.0, 0.0, 0.0, None, NO_COMMUNICATION)
    both = f.communication_us + f.computation_us - f.comp_or_comm_us
    return Overlap(f.communication_us, both, f.communication_us - both, 100.0 * both / f.communication_us)


def kernel_rows(export: Export, types: dict) -> list[KernelRow]:
    """The ``top_gpu_kernels`` table (schema.KernelRow): kernels by demangled name, then copies by kind
    and memsets, largest total first."""
    rows = []
    if export.has(KERNEL, "demangledName"):
        sums = list(export.conn.execute(f"SELECT demangledName, sum(end - start), count(*) FROM {KERNEL} GROUP BY 1"))
        names = export.names([r[0] for r in sums])
        rows += [(names[i], types.get(i, COMPUTATION), total, n) for i, total, n in sums]
    if export.has(MEMCPY, "copyKind"):
        sql = f"SELECT copyKind, sum(end - start), count(*) FROM {MEMCPY} GROUP BY 1"
        rows += [(copy_kind_name(k), MEMORY, total, n) for k, total, n in export.conn.execute(sql)]
    if export.has(MEMSET):
        total, n = export.conn.execute(f"SELECT sum(end - start), count(*) FROM {MEMSET}").fetchone()
        rows += [(MEMSET_NAME, MEMORY, total, n)] if n else []
    out = [KernelRow(name=name, type=t, total_us=total / 1e3, calls=n) for name, t, total, n in rows]
    return sorted(out, key=lambda r: (-r.total_us, r.name))


def device_header(export: Export) -> dict:
    """``TARGET_INFO_GPU`` as a Chrome trace's ``deviceProperties`` (name, compute capability), for
    analyzers.gemm_precision; empty where the export has no such table."""
    if not export.has("TARGET_INFO_GPU", "name", "computeMajor", "computeMinor"):
        return {}
    sql = "SELECT name, computeMajor, computeMinor FROM TARGET_INFO_GPU"
    props = [{"name": n, "computeMajor": a, "computeMinor": b} for n, a, b in export.conn.execute(sql)]
    return {"deviceProperties": props}

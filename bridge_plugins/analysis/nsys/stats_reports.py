"""The four ``nsys stats`` summaries, computed the way nsys computes them, so the figures agree.

``gpukernsum`` (kernels by name, grid and block), ``cudaapisum`` (CUDA runtime calls by name id,
the ``_v<N>`` version suffix cut from the name), ``gpumemtimesum`` (copies by kind, memsets) and
``nvtxsum`` (NVTX ranges by name, ``domain:`` prefixed, and style). Each row: count, total, mean,
median (the mean of the two middle values for an even count), min, max and sample standard
deviation, in nanoseconds as nsys prints them; aggregated by SQLite (``_grouped``), so nothing
in Python grows with the rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from bridge_plugins.analysis.figures import NsysStats, StatRow
from bridge_plugins.analysis.nsys.db import KERNEL, MEMCPY, MEMSET, NVTX, RUNTIME, Export

FETCH = 65536  # rows per fetchmany
_VERSION_SUFFIX = re.compile(r"_v\d{4}$")  # nsys cuts 6 characters that start with '_v': cudaMemcpy_v3020
# CUPTI's memcpy kinds (CUpti_ActivityMemcpyKind) as nsys 2022 names them
COPY_KINDS = {
    0: "Unknown",
    1: "HtoD",
    2: "DtoH",
    3: "HtoA",
    4: "AtoH",
    5: "AtoA",
    6: "AtoD",
    7: "DtoA",
    8: "DtoD",
    9: "HtoH",
    10: "PtoP",
}
MEMSET_NAME = "[CUDA memset]"
# NVTX_EVENTS.eventType: push/pop and start/end ranges (registered-string and text variants), domain creation
NVTX_RANGES = {59: "PushPop", 60: "StartEnd", 70: "PushPop", 71: "StartEnd"}
NVTX_DOMAIN_CREATE = 75


def api_name(raw: str) -> str:
    """A CUDA API function's name as nsys prints it: without the ``_v<version>`` suffix."""
    return _VERSION_SUFFIX.sub("", raw)


def copy_kind_name(kind: int) -> str:
    return f"[CUDA memcpy {COPY_KINDS.get(kind, str(kind))}]"


def _figures(key: tuple, n: int, total: int, lo: int, hi: int, mean: float, squares: float, middle: list[int]) -> tuple:
    median = sum(middle) / len(middle)
    std = math.sqrt(squares / (n - 1)) if n > 1 else 0.0
    return key, n, total, mean, median, lo, hi, std


def _grouped(export: Export, source: str) -> list[tuple]:
    """Figures per key of ``source`` (a SELECT of ``k1, k2, k3, dur``: three key columns, never NULL):
    the rows go to a temporary table (on disk) with an index by key and duration, from which SQLite
    aggregates each key in order and reads its middle rows directly: nothing grows with the rows."""
    conn = export.conn
    conn.execute("DROP TABLE IF EXISTS temp.vals")
    conn.execute("CREATE TEMP TABLE vals(k1, k2, k3, d INTEGER)")
    try:
        conn.execute(f"INSERT INTO temp.vals SELECT * FROM ({source})")
        conn.execute("CREATE INDEX temp.vals_by_key ON vals(k1, k2, k3, d)")
        sums = conn.execute(
            "SELECT k1, k2, k3, count(*), sum(d), min(d), max(d), avg(d) FROM temp.vals GROUP BY k1, k2, k3"
        ).fetchall()
        out = []
        for k1, k2, k3, n, total, lo, hi, mean in sums:
            squares = conn.execute(  # a range of the index per key: every row is read once in all
                "SELECT total((d - ?) * (d - ?)) FROM temp.vals WHERE k1 = ? AND k2 = ? AND k3 = ?",
                (mean, mean, k1, k2, k3),
            ).fetchone()[0]
            middle = [
                r[0]
                for r in conn.execute(
                    "SELECT d FROM temp.vals WHERE k1 = ? AND k2 = ? AND k3 = ? ORDER BY d LIMIT ? OFFSET ?",
                    (k1, k2, k3, 2 - n % 2, (n - 1) // 2),
                )
            ]
            out.append(_figures((k1, k2, k3), n, total, lo, hi, mean, squares, middle))
        return out
    finally:
        conn.execute("DROP TABLE IF EXISTS temp.vals")


def _no_detail(key: object) -> str | None:
    return None


def _rows(
    figures: list[tuple], name_of: Callable[[Any], str], detail_of: Callable[[Any], str | None] = _no_detail
) -> list[StatRow]:
    """StatRows of ``_grouped``'s figure tuples, largest total first (ties by name)."""
    rows = [
        StatRow(
            name=name_of(k),
            count=n,
            total_ns=t,
            avg_ns=a,
            median_ns=m,
            min_ns=lo,
            max_ns=hi,
            std_ns=sd,
            detail=detail_of(k),
        )
        for k, n, t, a, m, lo, hi, sd in figures
    ]
    return sorted(rows, key=lambda r: (-r.total_ns, r.name))


def _shape(grid: int, block: int) -> str | None:
    """'grid X Y Z block X Y Z' of the packed dimensions (kernel_stats), None where the export has none."""
    if grid < 0:
        return None
    g = (grid >> 32, (grid >> 16) & 0xFFFF, grid & 0xFFFF)
    b = (block >> 20, (block >> 10) & 0x3FF, block & 0x3FF)
    return "grid {} {} {} block {} {} {}".format(*g, *b)


def kernel_stats(export: Export) -> list[StatRow]:
    """gpukernsum: kernels by demangled name, grid and block (packed into integers: cheaper keys)."""
    if not export.has(KERNEL, "demangledName"):
        return []
    grid, block = "-1", "0"
    if export.has(KERNEL, "gridX", "gridY", "gridZ", "blockX", "blockY", "blockZ"):
        grid, block = "(gridX << 32) | (gridY << 16) | gridZ", "(blockX << 20) | (blockY << 10) | blockZ"
    figures = _grouped(export, f"SELECT demangledName, {grid}, {block}, end - start FROM {KERNEL}")
    names = export.names(list({f[0][0] for f in figures}))
    return _rows(figures, lambda k: names[k[0]], lambda k: _shape(k[1], k[2]))


def api_stats(export: Export) -> list[StatRow]:
    """cudaapisum: CUDA runtime calls by name id (two ids with one name stay two rows, as in nsys)."""
    if not export.has(RUNTIME, "nameId"):
        return []
    figures = _grouped(export, f"SELECT nameId, 0, 0, end - start FROM {RUNTIME}")
    names = export.names([f[0][0] for f in figures])
    return _rows(figures, lambda k: api_name(names[k[0]]))


def memory_stats(export: Export) -> list[StatRow]:
    """gpumemtimesum: copies by kind, then every memset as one row."""
    parts = []
    if export.has(MEMCPY, "copyKind"):
        parts.append(f"SELECT copyKind, 0, 0, end - start FROM {MEMCPY}")
    if export.has(MEMSET):
        parts.append(f"SELECT -1, 0, 0, end - start FROM {MEMSET}")
    if not parts:
        return []
    figures = _grouped(export, " UNION ALL ".join(parts))
    return _rows(figures, lambda k: MEMSET_NAME if k[0] == -1 else copy_kind_name(k[0]))


def nvtx_name_sql(export: Export, alias: str = "ne") -> str:
    """SQL for an NVTX event's name: its registered string (``textId``) or its inline ``text``."""
    if export.has(NVTX, "textId") and export.has("StringIds"):
        return f"coalesce((SELECT value FROM StringIds WHERE id = {alias}.textId), {alias}.text)"
    return f"{alias}.text"


def nvtx_stats(export: Export) -> list[StatRow]:
    """nvtxsum: ranges by ``domain:name`` and style; an open range lasts to the export's last timestamp."""
    if not export.has(NVTX, "eventType", "text"):
        return []
    name = nvtx_name_sql(export)
    types = ", ".join(str(t) for t in NVTX_RANGES)
    style = "CASE ne.eventType " + " ".join(f"WHEN {t} THEN '{s}'" for t, s in NVTX_RANGES.items()) + " END"
    domain = "NULL"
    if export.has(NVTX, "domainId", "globalTid"):
        domain = (
            f"(SELECT d.text FROM {NVTX} d WHERE d.eventType = {NVTX_DOMAIN_CREATE} AND d.domainId = ne.domainId "
            "AND (d.globalTid & 0x0000FFFFFF000000) = (ne.globalTid & 0x0000FFFFFF000000) ORDER BY d.start LIMIT 1)"
        )
    last = f"(SELECT max(max(start), max(coalesce(end, start))) FROM {NVTX})"
    source = f"""SELECT coalesce(CASE WHEN dom IS NOT NULL THEN dom || ':' || coalesce(nm, '') ELSE nm END, ''), st, 0,
        dur FROM (SELECT {domain} AS dom, {name} AS nm, {style} AS st, coalesce(ne.end, {last}) - ne.start AS dur
        FROM {NVTX} ne WHERE ne.eventType IN ({types}))"""
    figures = _grouped(export, source)
    return _rows(figures, lambda k: k[0], lambda k: k[1])


def nsys_stats(export: Export) -> NsysStats:
    return NsysStats(
        gpu_kernels=kernel_stats(export),
        cuda_api=api_stats(export),
        memory_ops=memory_stats(export),
        nvtx_ranges=nvtx_stats(export),
    )

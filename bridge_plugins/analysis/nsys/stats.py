"""The four ``nsys stats`` summaries, computed the way nsys computes them, so the figures agree.

``gpukernsum`` (kernels by name, grid and block), ``cudaapisum`` (CUDA runtime calls by name id,
the ``_v<N>`` version suffix cut from the name), ``gpumemtimesum`` (copies by kind, memsets) and
``nvtxsum`` (NVTX ranges by name, ``domain:`` prefixed, and style). Each row: count, total, mean,
median (the mean of the two middle values for an even count), min, max and sample standard
deviation, in nanoseconds as nsys prints them. One ordered cursor per table (sorted by SQLite,
which spills to disk), walked a row at a time with exact integer sums: nothing grows with the rows.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

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


@dataclass
class StatRow:
    """One row of an ``nsys stats`` summary (nanoseconds)."""

    name: str
    count: int
    total_ns: int
    avg_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    std_ns: float  # sample standard deviation; 0 for a single instance, as nsys prints it
    detail: str | None = None  # kernels: 'grid gx gy gz block bx by bz'; NVTX: the style


@dataclass
class NsysStats:
    """What ``nsys stats --report gpukernsum,cudaapisum,gpumemtimesum,nvtxsum`` prints, row for row."""

    gpu_kernels: list[StatRow]
    cuda_api: list[StatRow]
    memory_ops: list[StatRow]
    nvtx_ranges: list[StatRow]


def api_name(raw: str) -> str:
    """A CUDA API function's name as nsys prints it: without the ``_v<version>`` suffix."""
    return _VERSION_SUFFIX.sub("", raw)


def copy_kind_name(kind: int) -> str:
    return f"[CUDA memcpy {COPY_KINDS.get(kind, str(kind))}]"


def _walk(rows: Iterable[tuple]) -> list[tuple]:
    """Rows ``(key, duration, group size)`` sorted by key then duration -> one figure tuple per key."""
    out: list[tuple] = []
    key, n, total, squares, lo, hi, mid = None, 0, 0, 0, 0, 0, 0
    for k, dur, size in rows:
        if k != key or n == 0:
            if n:
                out.append(_figures(key, n, total, squares, lo, hi, mid))
            key, n, total, squares, lo, mid = k, 0, 0, 0, dur, 0
        if n == (size - 1) // 2 or n == size // 2:
            mid += dur
        n += 1
        total += dur
        squares += dur * dur
        hi = dur
    if n:
        out.append(_figures(key, n, total, squares, lo, hi, mid))
    return out


def _figures(key: object, n: int, total: int, squares: int, lo: int, hi: int, mid: int) -> tuple:
    variance = (n * squares - total * total) / (n * (n - 1)) if n > 1 else 0.0  # exact integers until here
    median = mid / 2 if n % 2 == 0 else float(mid)
    return key, n, total, total / n, median, lo, hi, math.sqrt(max(variance, 0.0))


def _grouped(export: Export, source: str) -> list[tuple]:
    """Figures per key of ``source`` (a SELECT of ``key, dur``), through one sorted cursor."""
    sql = f"SELECT key, dur, count(*) OVER (PARTITION BY key) FROM ({source}) ORDER BY key, dur"
    cur = export.conn.execute(sql)
    return _walk(row for batch in iter(lambda: cur.fetchmany(FETCH), []) for row in batch)


def _no_detail(key: object) -> str | None:
    return None


def _rows(
    figures: list[tuple], name_of: Callable[[Any], str], detail_of: Callable[[Any], str | None] = _no_detail
) -> list[StatRow]:
    """StatRows of ``_walk``'s figure tuples, largest total first (ties by name)."""
    rows = [StatRow(name_of(k), n, t, a, m, lo, hi, sd, detail_of(k)) for k, n, t, a, m, lo, hi, sd in figures]
    return sorted(rows, key=lambda r: (-r.total_ns, r.name))


def kernel_stats(export: Export) -> list[StatRow]:
    """gpukernsum: kernels by demangled name, grid and block."""
    if not export.has(KERNEL):
        return []
    shape = "printf('grid %d %d %d block %d %d %d', gridX, gridY, gridZ, blockX, blockY, blockZ)"
    if not export.has(KERNEL, "gridX", "blockX"):
        shape = "''"
    key = f"json_array(demangledName, {shape})"  # one sortable key of (name id, shape)
    figures = _grouped(export, f"SELECT {key} AS key, end - start AS dur FROM {KERNEL}")
    keys = [json.loads(f[0]) for f in figures]
    names = export.names([k[0] for k in keys])
    by_key = {f[0]: k for f, k in zip(figures, keys, strict=True)}
    return _rows(figures, lambda k: names[by_key[k][0]], lambda k: by_key[k][1] or None)


def api_stats(export: Export) -> list[StatRow]:
    """cudaapisum: CUDA runtime calls by name id (two ids with one name stay two rows, as in nsys)."""
    if not export.has(RUNTIME, "nameId"):
        return []
    figures = _grouped(export, f"SELECT nameId AS key, end - start AS dur FROM {RUNTIME}")
    names = export.names([f[0] for f in figures])
    return _rows(figures, lambda k: api_name(names[k]))


def memory_stats(export: Export) -> list[StatRow]:
    """gpumemtimesum: copies by kind, then every memset as one row."""
    parts = []
    if export.has(MEMCPY, "copyKind"):
        parts.append(f"SELECT copyKind AS key, end - start AS dur FROM {MEMCPY}")
    if export.has(MEMSET):
        parts.append(f"SELECT -1 AS key, end - start AS dur FROM {MEMSET}")
    if not parts:
        return []
    figures = _grouped(export, " UNION ALL ".join(parts))
    return _rows(figures, lambda k: MEMSET_NAME if k == -1 else copy_kind_name(k))


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
    source = f"""SELECT json_array(CASE WHEN dom IS NOT NULL THEN dom || ':' || coalesce(nm, '') ELSE nm END, st) AS key,
        dur FROM (SELECT {domain} AS dom, {name} AS nm, {style} AS st, coalesce(ne.end, {last}) - ne.start AS dur
        FROM {NVTX} ne WHERE ne.eventType IN ({types}))"""
    figures = _grouped(export, source)
    return _rows(figures, lambda k: json.loads(k)[0] or "", lambda k: json.loads(k)[1])


def nsys_stats(export: Export) -> NsysStats:
    return NsysStats(kernel_stats(export), api_stats(export), memory_stats(export), nvtx_stats(export))

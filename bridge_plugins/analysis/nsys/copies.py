"""Copies and memsets of an export per kind (analyzers.bandwidth's ``CopyKind``), for the memcpy finding.

Per kind (``Memcpy HtoD``, ..., ``Memset``, as for PyTorch traces): events, bytes, time, and the
copies with pageable host memory on either side (``srcKind``/``dstKind`` 0, CUPTI's
``CUDA_MEMOPR_MEMORY_KIND_PAGEABLE``), which are synchronous with the host. The bandwidth over
concurrent copies (HTA's series from Kineto's recorded bandwidths) is not computed here: its
distribution is empty and the note says so.
"""

from __future__ import annotations

from bridge_plugins.analysis.analyzers.bandwidth import CopyKind, MemoryBandwidth
from bridge_plugins.analysis.analyzers.distribution import Distribution
from bridge_plugins.analysis.nsys.db import MEMCPY, MEMSET, Export
from bridge_plugins.analysis.nsys.stats_reports import COPY_KINDS

PAGEABLE = 0
NOTE = "bandwidth over concurrent copies is not computed for Nsight Systems reports"


def memory_copies(export: Export) -> MemoryBandwidth | None:
    """The copies and memsets by kind; None for an export without either table."""
    kinds: list[CopyKind] = []
    if export.has(MEMCPY, "copyKind", "bytes"):
        pageable = "0"
        if export.has(MEMCPY, "srcKind", "dstKind"):
            pageable = f"(srcKind = {PAGEABLE} OR dstKind = {PAGEABLE})"
        sql = f"""SELECT copyKind, count(*), total(bytes), total(end - start), total({pageable}),
            total(CASE WHEN {pageable} THEN end - start ELSE 0 END) FROM {MEMCPY} GROUP BY copyKind"""
        for kind, n, nbytes, ns, paged, paged_ns in export.conn.execute(sql):
            name = f"Memcpy {COPY_KINDS.get(kind, 'Unknown')}"
            kinds.append(CopyKind(name, n, nbytes, ns / 1e3, int(paged), paged_ns / 1e3, Distribution(count=0)))
    if export.has(MEMSET, "bytes"):
        n, nbytes, ns = export.conn.execute(
            f"SELECT count(*), total(bytes), total(end - start) FROM {MEMSET}"
        ).fetchone()
        if n:
            kinds.append(CopyKind("Memset", n, nbytes, ns / 1e3, 0, 0.0, Distribution(count=0)))
    if not export.has(MEMCPY) and not export.has(MEMSET):
        return None
    return MemoryBandwidth(sorted(kinds, key=lambda k: k.kind), NOTE)

"""Memory copy and set bandwidth per kind (HTA's ``get_memory_bw_summary``).

Kinds: ``Memcpy HtoD``, ``Memcpy DtoH``, ``Memcpy DtoD``, ``Memset`` (the start of the event's
name). Per kind, the bandwidth Kineto recorded for each event (``memory bandwidth (GB/s)``) is
summed over events running at once, and summarized over the points where that sum changes and is
above 0, as HTA does. Also per kind: events, bytes, time, and how many copies used pageable
(unpinned) host memory, which makes a copy synchronous with the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bridge_plugins.analysis.analyzers.distribution import Distribution, describe
from bridge_plugins.analysis.trace.collect import Collected
from bridge_plugins.analysis.trace.gpu_events import GpuEvents
from bridge_plugins.analysis.trace.kernel_types import MEMORY


@dataclass
class CopyKind:
    kind: str
    events: int
    bytes: float
    time_us: float
    pageable: int
    pageable_us: float  # time of those copies
    bandwidth_gbps: Distribution


@dataclass
class MemoryBandwidth:
    kinds: list[CopyKind]
    note: str | None = None


def copy_kind(name: str) -> str:
    if name.startswith("Memset"):
        return "Memset"
    return name[:11] if name.startswith("Memcpy") else "Memcpy Unknown"


def _bw_series(ts: np.ndarray, dur: np.ndarray, bw: np.ndarray) -> np.ndarray:
    dur = np.where(dur == 0, 1.0, dur)  # HTA: a 0 us copy lasts 1 us
    t = np.concatenate([ts, ts + dur])
    delta = np.concatenate([bw, -bw])
    order = np.lexsort((-np.sign(delta), t))
    level = np.cumsum(delta[order])
    return level[level > 1e-12]


def _recorded(d: Collected, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The bandwidth and bytes Kineto recorded for GPU events (by position among the collector's),
    NaN for those without (not a memcpy or memset by category)."""
    bw, nbytes = np.full(len(index), np.nan), np.full(len(index), np.nan)
    if len(d.mem_index) and len(index):
        at = np.frombuffer(d.mem_index, np.int64)  # increasing: appended in event order
        pos = np.minimum(np.searchsorted(at, index), len(at) - 1)
        found = at[pos] == index
        bw[found] = np.frombuffer(d.mem_bw, np.float64)[pos[found]]
        nbytes[found] = np.frombuffer(d.mem_bytes, np.float64)[pos[found]]
    return bw, nbytes


def memory_bandwidth(d: Collected, g: GpuEvents) -> MemoryBandwidth:
    mem = g.of_kind(MEMORY)
    if not mem.any():
        return MemoryBandwidth([], "no memcpy or memset on the GPU")
    distinct, of_event = np.unique(g.name[mem], return_inverse=True)  # per name, not per copy
    names = [d.names[i] for i in distinct.tolist()]
    kinds = np.array([copy_kind(n) for n in names], dtype=object)[of_event]
    pageable = np.array(["Pageable" in n for n in names], dtype=bool)[of_event]
    ts, dur = g.ts[mem], g.dur[mem]
    bw, nbytes = _recorded(d, g.index[mem])
    out = []
    for k in sorted(set(kinds.tolist())):
        m = kinds == k
        has_bw = m & ~np.isnan(bw)
        out.append(
            CopyKind(
                kind=k,
                events=int(m.sum()),
                bytes=float(np.nansum(nbytes[m])),
                time_us=float(dur[m].sum()),
                pageable=int(pageable[m].sum()),
                pageable_us=float(dur[m & pageable].sum()),
                bandwidth_gbps=describe(_bw_series(ts[has_bw], dur[has_bw], bw[has_bw])),
            )
        )
    return MemoryBandwidth(out)

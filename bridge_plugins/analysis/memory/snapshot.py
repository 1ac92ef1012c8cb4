"""Figures of a CUDA memory snapshot: peaks and when, allocated bytes over time, what was alive
at the peak and at the end (by site), and the allocator's segments.

:func:`snapshot_figures` returns them typed (memory.results.SnapshotFigures: ``bridge-plugins memory
--json`` prints it through ``jsonable``; the HTML report draws it). The layout, and how profiler-made snapshots differ:
docs/formats.md.
"""

from __future__ import annotations

import dataclasses
import os
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from bridge_plugins.analysis.errors import Problem
from bridge_plugins.analysis.jsonable import jsonable
from bridge_plugins.analysis.memory.budget import OverBudget, memory_budget
from bridge_plugins.analysis.memory.loader import SnapshotFormatError, load_snapshot
from bridge_plugins.analysis.memory.results import (
    UNKNOWN_SEGMENTS,
    DeviceFigures,
    MemoryRead,
    OutOfMemory,
    Peak,
    RankSnapshot,
    SegmentRow,
    SegmentTotals,
    SiteBytes,
    SnapshotFigures,
)
from bridge_plugins.analysis.memory.sites import site_of
from bridge_plugins.analysis.memory.timeline import Allocation, DeviceReplay, replay
from bridge_plugins.jobdir import names as artifact_names

TIMELINE_POINTS = 600
TOP_SITES = 15


def sites_by_bytes(allocations: Iterable[Allocation], top: int | None = TOP_SITES) -> list[SiteBytes]:
    """Bytes and counts per site, largest first; ``categories`` splits the bytes by the
    profiler's tensor category where the snapshot has one."""
    groups: dict[str, dict] = {}
    sites: dict[tuple[int, str | None], str] = {}  # one site_of per distinct frame list (torch shares them)
    for a in allocations:
        key = (id(a.frames), a.category)
        site = sites.get(key)
        if site is None:
            site = sites[key] = site_of(a.frames, a.category)
        g = groups.setdefault(site, {"bytes": 0, "count": 0, "categories": defaultdict(int)})
        g["bytes"] += a.size
        g["count"] += 1
        if a.category:
            g["categories"][a.category] += a.size
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1]["bytes"], kv[0]))[:top]
    return [SiteBytes(site=s, bytes=g["bytes"], count=g["count"], categories=dict(g["categories"])) for s, g in ranked]


def _timeline(r: DeviceReplay, t0: float | None) -> list[list]:
    points = [[-1, 0.0 if t0 is not None else None, r.initial_allocated, r.initial_reserved]]
    n = r.entries
    width = max(1, -(-n // TIMELINE_POINTS))
    for start in range(0, n, width):
        i = max(range(start, min(n, start + width)), key=lambda k: (r.allocated[k], -k))
        points.append([i, _rel(r.time_us[i], t0), r.allocated[i], r.reserved[i]])
    return points


def _rel(t: float | None, t0: float | None) -> float | None:
    return None if t is None or t0 is None else round((t - t0) / 1e6, 6)


def _device_figures(r: DeviceReplay, entries: list[dict], top: int | None) -> DeviceFigures:
    t0 = next((t for t in r.time_us if t is not None), None)
    peak_entry = entries[r.peak_index] if r.peak_index >= 0 else {}
    return DeviceFigures(
        device=r.device,
        entries=r.entries,
        peak_allocated=r.peak_allocated,
        peak_reserved=r.peak_reserved,
        peak=Peak(
            index=r.peak_index,
            time_s=_rel(peak_entry.get("time_us"), t0),
            site=site_of(peak_entry.get("frames")) if peak_entry else None,
            size=peak_entry.get("size") if peak_entry else None,
        ),
        end_allocated=r.allocated[-1] if r.entries else r.initial_allocated,
        end_reserved=r.reserved[-1] if r.entries else r.initial_reserved,
        timeline=_timeline(r, t0),
        sites_at_peak=sites_by_bytes(r.live_at_peak, top),
        alive_at_end=sites_by_bytes(r.live_at_end, top),
        ooms=[
            OutOfMemory(index=o.index, size=o.size, device_free=o.device_free, time_s=_rel(o.time_us, t0))
            for o in r.ooms
        ],
    )


def segment_totals(segments: list[dict]) -> SegmentTotals:
    """The final state of the allocator's segments, totals as torch's ``_memory_viz segsum`` counts
    them: requested bytes of active blocks, internal free (rounding) and external free (inactive)."""
    per: list[SegmentRow] = []
    totals: defaultdict[str, int] = defaultdict(int)
    for seg in segments:
        active = [b for b in seg.get("blocks", []) if b.get("state") == "active_allocated"]
        allocated = sum(b["size"] for b in active)
        requested = sum(b.get("requested_size", b["size"]) for b in active)
        row = SegmentRow(
            device=seg.get("device", 0),
            address=seg.get("address"),
            stream=seg.get("stream", 0),
            segment_type=seg.get("segment_type"),
            total_size=seg.get("total_size", 0),
            allocated=allocated,
            requested=requested,
            free_internal=allocated - requested,
            free_external=sum(b["size"] for b in seg.get("blocks", []) if b.get("state") != "active_allocated"),
            blocks=len(seg.get("blocks", [])),
            active_blocks=len(active),
        )
        per.append(row)
        for key in ("total_size", "allocated", "requested", "free_internal", "free_external"):
            totals[key] += getattr(row, key)
    per.sort(key=lambda row: -row.total_size)
    return SegmentTotals(
        count=len(segments),
        reserved=totals["total_size"],
        allocated=totals["allocated"],
        requested=totals["requested"],
        free_internal=totals["free_internal"],
        free_external=totals["free_external"],
        per_segment=per,
    )


def _source(segments: list[dict]) -> str:
    """'allocator' (a CUDA snapshot) or 'profiler' (made by ``_profile_to_snapshot``: its blocks have
    no addresses and its "segments" are address spans of host tensors, not cudaMalloc calls)."""
    blocks = [b for s in segments for b in s.get("blocks", [])]
    return "profiler" if blocks and not any("address" in b for b in blocks) else "allocator"


def snapshot_figures(path: str | Path, top_sites: int | None = TOP_SITES) -> SnapshotFigures:
    """Every figure of one snapshot file; ``top_sites=None`` keeps every site (what a comparison
    needs). Reading it runs under a memory budget (``budget``)."""
    try:
        size = os.stat(path).st_size
    except OSError:
        size = 0  # load_snapshot names the problem
    try:
        with memory_budget(size):
            return _figures(path, top_sites)
    except OverBudget as e:
        raise SnapshotFormatError(f"{path}: refused: {e}") from None


def _figures(path: str | Path, top_sites: int | None) -> SnapshotFigures:
    data = load_snapshot(path)
    try:
        segments, traces = data["segments"], data["device_traces"]
        devices = []
        for device in sorted({*range(len(traces)), *(s.get("device", 0) for s in segments)}):
            entries = traces[device] if device < len(traces) else []
            if entries or any(s.get("device", 0) == device for s in segments):
                devices.append(_device_figures(replay(entries, segments, device), entries, top_sites))
        source = _source(segments)
        segs = segment_totals(segments)
        if source == "profiler":  # no cudaMalloc: reserved memory is unknown, not the address span
            segs = UNKNOWN_SEGMENTS
            devices = [_reserved_unknown(dev) for dev in devices]
        return SnapshotFigures(file=str(path), source=source, devices=devices, segments=segs)
    except (KeyError, TypeError, AttributeError, ValueError) as e:
        raise SnapshotFormatError(
            f"{path}: not a CUDA memory snapshot (malformed entry: {type(e).__name__}: {e})"
        ) from None


def _reserved_unknown(dev: DeviceFigures) -> DeviceFigures:
    """``dev`` with its reserved bytes None (peak, end and every timeline point)."""
    timeline = [[*point[:3], None] for point in dev.timeline]
    return dataclasses.replace(dev, peak_reserved=None, end_reserved=None, timeline=timeline)


def main_device(figures: SnapshotFigures) -> DeviceFigures | None:
    """The device with the highest allocated peak in a snapshot's figures: the one a per-rank snapshot is about."""
    return figures.main_device()


def memory_entry(paths: Iterable[str | Path]) -> MemoryRead:
    """What ``analysis.pipeline.summarize`` merges into its ``memory`` entry: each snapshot's figures with its
    rank, and ``{"file", "error"}`` for a file that is not a snapshot (a problem, not a failure)."""
    files, problems = [], []
    for path in paths:
        try:
            figures = snapshot_figures(path)
        except SnapshotFormatError as e:
            problems.append(Problem(file=str(path), error=str(e).removeprefix(f"{path}: ")))
            continue
        name = artifact_names.parse(path)
        rank = name.rank if name is not None else None
        files.append(RankSnapshot(**{f.name: getattr(figures, f.name) for f in dataclasses.fields(figures)}, rank=rank))
    return MemoryRead(files=files, problems=problems)


def summarize_snapshot(path: str | Path, top_sites: int | None = TOP_SITES) -> dict:
    """The old name (docs/reference/api.md named it), kept for callers: :func:`snapshot_figures` as
    the JSON-ready dicts it returned then (layout: docs/formats.md)."""
    return jsonable(snapshot_figures(path, top_sites))


summarize_snapshots = memory_entry  # the old name of memory_entry, kept for callers

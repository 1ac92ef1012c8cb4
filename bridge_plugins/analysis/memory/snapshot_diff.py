"""Two snapshots side by side: how the peaks, the end state and each site's bytes at the peak moved.

Works on :func:`bridge_plugins.analysis.memory.snapshot.snapshot_figures` results (each reduced to its main
device), so ``memory --compare`` and the report's comparison use the same figures.
"""

from __future__ import annotations

from collections.abc import Iterable

from bridge_plugins.analysis.memory.results import (
    Delta,
    SegmentDeltas,
    SiteBytes,
    SiteDelta,
    SnapshotComparison,
    SnapshotFigures,
)

TOP_CHANGES = 15


def _delta(base: int | None, new: int | None) -> Delta:
    """None (unknown, e.g. reserved bytes of a profiler-made snapshot) makes the delta None."""
    return Delta(base=base, new=new, delta=None if base is None or new is None else new - base)


def _by_site(rows: Iterable[SiteBytes]) -> dict[str, int]:
    return {row.site: row.bytes for row in rows}


def _site_deltas(base_rows: Iterable[SiteBytes], new_rows: Iterable[SiteBytes]) -> list[SiteDelta]:
    base, new = _by_site(base_rows), _by_site(new_rows)
    moved = [(s, base.get(s, 0), new.get(s, 0)) for s in set(base) | set(new)]
    rows = [SiteDelta(site=s, base=b, new=n, delta=n - b) for s, b, n in moved if n != b]
    return sorted(rows, key=lambda r: (-abs(r.delta), r.site))[:TOP_CHANGES]


def compare_snapshot_figures(base: SnapshotFigures, new: SnapshotFigures) -> SnapshotComparison:
    """Each figure of the main devices and the segments as base, new and new minus base, and the
    sites whose bytes moved most; a snapshot without a trace counts as zero everywhere."""
    b, n = base.main_device(), new.main_device()

    def figure(key: str) -> Delta:
        return _delta(getattr(b, key) if b else 0, getattr(n, key) if n else 0)

    seg_b, seg_n = base.segments, new.segments
    return SnapshotComparison(
        base=base.file,
        new=new.file,
        peak_allocated=figure("peak_allocated"),
        peak_reserved=figure("peak_reserved"),
        end_allocated=figure("end_allocated"),
        end_reserved=figure("end_reserved"),
        sites_at_peak=_site_deltas(b.sites_at_peak if b else [], n.sites_at_peak if n else []),
        alive_at_end=_site_deltas(b.alive_at_end if b else [], n.alive_at_end if n else []),
        segments=SegmentDeltas(
            count=_delta(seg_b.count, seg_n.count),
            reserved=_delta(seg_b.reserved, seg_n.reserved),
            requested=_delta(seg_b.requested, seg_n.requested),
        ),
    )


compare_summaries = compare_snapshot_figures  # the old name (docs/reference/api.md named it), kept for callers

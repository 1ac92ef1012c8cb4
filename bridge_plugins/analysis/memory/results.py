"""The typed figures of a CUDA memory snapshot and of a comparison of two: dataclasses built by
keyword, whose fields are the JSON's keys in its order (``jsonable`` writes them; the layout:
docs/formats.md). snapshot.py and snapshot_diff.py build them; text/ and report/ read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from bridge_plugins.analysis.errors import Problem


@dataclass(frozen=True, kw_only=True)
class SiteBytes:
    """The bytes and allocations of one site (memory.sites), split by the profiler's tensor category."""

    site: str
    bytes: int
    count: int
    categories: dict[str, int]


@dataclass(frozen=True, kw_only=True)
class Peak:
    """Where allocated bytes peaked: the trace entry (-1: before the first), when, and its allocation."""

    index: int
    time_s: float | None
    site: str | None
    size: int | None


@dataclass(frozen=True, kw_only=True)
class OutOfMemory:
    """An ``oom`` entry of the allocator trace: bytes asked for, bytes free, seconds after the first event."""

    index: int
    size: int
    device_free: int | None
    time_s: float | None


@dataclass(frozen=True, kw_only=True)
class DeviceFigures:
    """One device's replay: peaks, the end state, the timeline points ``[index, time_s, allocated,
    reserved]``, the sites at the peak and at the end, the OOMs. Reserved bytes are None where the
    snapshot was made from a torch.profiler run."""

    device: int
    entries: int
    peak_allocated: int
    peak_reserved: int | None
    peak: Peak
    end_allocated: int
    end_reserved: int | None
    timeline: list[list]
    sites_at_peak: list[SiteBytes]
    alive_at_end: list[SiteBytes]
    ooms: list[OutOfMemory]


@dataclass(frozen=True, kw_only=True)
class SegmentRow:
    """One allocator segment at the end, counted as torch's ``_memory_viz segsum`` counts it."""

    device: int
    address: int | None
    stream: int
    segment_type: str | None
    total_size: int
    allocated: int
    requested: int
    free_internal: int
    free_external: int
    blocks: int
    active_blocks: int


@dataclass(frozen=True, kw_only=True)
class SegmentTotals:
    """The segments' totals and rows, largest first; bytes None where they are unknown (a profiler-made snapshot)."""

    count: int
    reserved: int | None
    allocated: int | None
    requested: int | None
    free_internal: int | None
    free_external: int | None
    per_segment: list[SegmentRow]


UNKNOWN_SEGMENTS = SegmentTotals(
    count=0, reserved=None, allocated=None, requested=None, free_internal=None, free_external=None, per_segment=[]
)
"""The segments of a snapshot made from a torch.profiler run: none (its byte figures are unknown, not 0)."""


@dataclass(frozen=True, kw_only=True)
class SnapshotFigures:
    """Every figure of one snapshot file: ``source`` is 'allocator' or 'profiler' (docs/formats.md)."""

    file: str
    source: str
    devices: list[DeviceFigures]
    segments: SegmentTotals

    def main_device(self) -> DeviceFigures | None:
        """The device with the highest allocated peak: the one a per-rank snapshot is about."""
        return max(self.devices, key=lambda d: d.peak_allocated, default=None)


@dataclass(frozen=True, kw_only=True)
class RankSnapshot(SnapshotFigures):
    """A snapshot's figures in a job's summary, with the rank its file name gives (None: none)."""

    rank: int | None


@dataclass(frozen=True, kw_only=True)
class MemoryEntry:
    """The Summary's ``memory`` entry: the snapshots given and the figures of those that could be read."""

    snapshots: list[str]
    files: list[RankSnapshot]


@dataclass(frozen=True, kw_only=True)
class MemoryRead:
    """What reading a job's snapshots gave: their figures, and a problem per file that is not a snapshot."""

    files: list[RankSnapshot]
    problems: list[Problem] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Delta:
    """A figure in the base and the new snapshot; ``delta`` new - base, None where either is unknown."""

    base: int | None
    new: int | None
    delta: int | None


@dataclass(frozen=True, kw_only=True)
class SiteDelta:
    """How one site's bytes moved between the two snapshots."""

    site: str
    base: int
    new: int
    delta: int


@dataclass(frozen=True, kw_only=True)
class SegmentDeltas:
    """How the segments changed between two snapshots: their number, reserved and requested bytes."""

    count: Delta
    reserved: Delta
    requested: Delta


@dataclass(frozen=True, kw_only=True)
class SnapshotComparison:
    """Two snapshots side by side (each reduced to its main device): ``memory --compare`` and the report's."""

    base: str
    new: str
    peak_allocated: Delta
    peak_reserved: Delta
    end_allocated: Delta
    end_reserved: Delta
    sites_at_peak: list[SiteDelta]
    alive_at_end: list[SiteDelta]
    segments: SegmentDeltas

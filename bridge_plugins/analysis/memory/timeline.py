"""Replay one device's allocator trace: allocated and reserved bytes after every event.

Follows the allocator's own accounting (``torch.cuda.memory_allocated``/``memory_reserved``) and
infers the allocations that predate the trace (a ring buffer keeps only the newest events).
The rules, one by one: docs/formats.md ("How the allocator trace is replayed").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

BEFORE_TRACE = "before-trace"
"""Key of the one allocation standing for unaddressed blocks that predate the trace."""
Address = int | str | None
"""A block's address; BEFORE_TRACE for the unaddressed remainder; None where an entry has none."""
_RESERVE = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}


@dataclass
class Allocation:
    addr: Address
    size: int
    frames: list
    category: str | None = None
    index: int = -1
    """Trace index of its ``alloc``; -1 when it existed before the trace began."""


@dataclass(frozen=True, kw_only=True)
class OomEntry:
    """An ``oom`` entry of the trace, as the allocator wrote it: bytes asked for (0 when it says
    none), bytes free on the device, its time (results.OutOfMemory makes that relative)."""

    index: int
    size: int
    device_free: int | None
    time_us: float | None


@dataclass
class DeviceReplay:
    """What one device's trace says, in event order (index i = after the i-th trace entry)."""

    device: int
    entries: int
    allocated: list[int]
    reserved: list[int]
    time_us: list[float | None]
    initial_allocated: int
    initial_reserved: int
    peak_index: int
    """Index of the first event at which allocated bytes are highest; -1 = before the first event."""
    live_at_peak: list[Allocation]
    live_at_end: list[Allocation]
    ooms: list[OomEntry] = field(default_factory=list)

    @property
    def peak_allocated(self) -> int:
        return max([self.initial_allocated, *self.allocated])

    @property
    def peak_reserved(self) -> int:
        return max([self.initial_reserved, *self.reserved])


def end_blocks(segments: list[dict], device: int) -> tuple[dict[Address, Allocation] | None, int]:
    """Active blocks of the final state: ({address: allocation} or None, their requested bytes).

    The mapping is None when blocks carry no ``address``: profiler-made snapshots lay blocks out
    one after another although their tensors can overlap, so a computed address is not a real one.
    """
    found: dict[Address, Allocation] = {}
    total, addressed = 0, True
    for seg in segments:
        if seg.get("device", 0) != device:
            continue
        for blk in seg.get("blocks", []):
            if blk.get("state") == "active_allocated":
                size = blk.get("requested_size", blk["size"])
                total += size
                addressed = addressed and "address" in blk
                if "address" in blk:
                    found[blk["address"]] = Allocation(
                        blk["address"], size, blk.get("frames") or [], blk.get("category")
                    )
    return (found if addressed else None), total


def _classified(entries: list[dict]) -> Iterator[tuple[int, str | None, dict]]:
    """(index, kind, entry) per entry, kind 'alloc', 'free', 'reserve', 'oom' or None: the one place
    that decides which entry ends an allocation (rules: docs/formats.md)."""
    requested: set[Address] = set()
    for i, e in enumerate(entries):
        action, addr = e.get("action"), e.get("addr")
        kind = None
        if action == "alloc":
            kind = "alloc"
        elif action == "free_requested":
            requested.add(addr)
            kind = "free"
        elif action == "free_completed":
            kind = None if addr in requested else "free"
            requested.discard(addr)
        elif action in _RESERVE:
            kind = "reserve"
        elif action == "oom":
            kind = "oom"
        yield i, kind, e


def _allocation(e: dict, index: int = -1) -> Allocation:
    return Allocation(e.get("addr"), e.get("size", 0), e.get("frames") or [], e.get("category"), index)


def _preexisting(entries: list[dict], segments: list[dict], device: int) -> dict[Address, Allocation]:
    """Allocations alive when the trace began (rules: docs/formats.md)."""
    live: dict[Address, Allocation] = {}
    before: dict[Address, Allocation] = {}
    for i, kind, e in _classified(entries):
        addr = e.get("addr")
        if kind == "alloc":
            live[addr] = _allocation(e, i)
        elif kind == "free" and addr in live:
            del live[addr]
        elif kind == "free":
            before[addr] = _allocation(e)
    final, final_bytes = end_blocks(segments, device)
    if final is not None:
        before.update({addr: a for addr, a in final.items() if addr not in live and addr not in before})
    else:  # no addresses to match: whatever the final state holds beyond the trace's own allocations
        unexplained = final_bytes - sum(a.size for a in live.values())
        if unexplained > 0:
            before[BEFORE_TRACE] = Allocation(BEFORE_TRACE, unexplained, [], "allocated before the trace")
    return before


def _apply(live: dict[Address, Allocation], kind: str | None, e: dict, index: int) -> int:
    """Update ``live`` for one entry; returns the change in allocated bytes."""
    if kind == "alloc":
        old = live.get(e.get("addr"))
        live[e.get("addr")] = _allocation(e, index)
        return e.get("size", 0) - (old.size if old else 0)
    if kind == "free":
        gone = live.pop(e.get("addr"), None)
        return -gone.size if gone else 0
    return 0


def replay(entries: list[dict], segments: list[dict], device: int) -> DeviceReplay:
    start = _preexisting(entries, segments, device)
    live = dict(start)
    initial_allocated = sum(a.size for a in live.values())
    final_reserved = sum(s.get("total_size", 0) for s in segments if s.get("device", 0) == device)
    initial_reserved = final_reserved - sum(_RESERVE.get(e.get("action", ""), 0) * e.get("size", 0) for e in entries)
    allocated, reserved, times = [], [], []
    ooms: list[OomEntry] = []
    current, reserving = initial_allocated, initial_reserved
    peak_value, peak_index = initial_allocated, -1
    for i, kind, e in _classified(entries):
        current += _apply(live, kind, e, i)
        if kind == "reserve":
            reserving += _RESERVE[e["action"]] * e.get("size", 0)
        elif kind == "oom":
            ooms.append(
                OomEntry(index=i, size=e.get("size", 0), device_free=e.get("device_free"), time_us=e.get("time_us"))
            )
        allocated.append(current)
        reserved.append(reserving)
        times.append(e.get("time_us"))
        if current > peak_value:
            peak_value, peak_index = current, i
    return DeviceReplay(
        device=device,
        entries=len(entries),
        allocated=allocated,
        reserved=reserved,
        time_us=times,
        initial_allocated=initial_allocated,
        initial_reserved=initial_reserved,
        peak_index=peak_index,
        live_at_peak=_live_after(entries, peak_index, start),
        live_at_end=list(live.values()),
        ooms=ooms,
    )


def _live_after(entries: list[dict], stop: int, start: dict[Address, Allocation]) -> list[Allocation]:
    """Allocations alive right after entry ``stop`` (a second, short replay: cheaper than copying
    the live set at every new maximum)."""
    live = dict(start)
    for i, kind, e in _classified(entries[: stop + 1]):
        _apply(live, kind, e, i)
    return list(live.values())

"""``bridge-plugins memory`` as text: a snapshot's figures and the comparison of two, for a terminal."""

from __future__ import annotations

from bridge_plugins.analysis.memory.results import (
    Delta,
    MemoryEntry,
    Peak,
    SiteBytes,
    SiteDelta,
    SnapshotComparison,
    SnapshotFigures,
)
from bridge_plugins.analysis.memory.snapshot import main_device

_BARS = " ▁▂▃▄▅▆▇█"
ROWS = 10


def fmt_bytes(n: float | None) -> str:
    """Binary units, as torch's memory tools print them (``12.5 MiB``); None is 'n/a'."""
    if n is None:
        return "n/a"
    sign = "-" if n < 0 else ""
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024
    return f"{sign}{n} B"


def sparkline(values: list[int], width: int = 60) -> str:
    if not values:
        return ""
    step = max(1, -(-len(values) // width))
    peaks = [max(values[i : i + step]) for i in range(0, len(values), step)]
    top = max(peaks) or 1
    return "".join(_BARS[round(v / top * (len(_BARS) - 1))] for v in peaks)


def _when(peak: Peak) -> str:
    if peak.index < 0:
        return "before the first trace entry"
    t = f", {peak.time_s:.3f} s in" if peak.time_s is not None else ""
    by = f", by {peak.site} ({fmt_bytes(peak.size)})" if peak.site else ""
    return f"at trace entry {peak.index}{t}{by}"


def _site_rows(rows: list[SiteBytes]) -> list[str]:
    if not rows:
        return ["    (none)"]
    out = [f"    {'bytes':>10}  {'count':>6}  site"]
    for r in rows[:ROWS]:
        cats = ", ".join(f"{k} {fmt_bytes(v)}" for k, v in sorted(r.categories.items(), key=lambda kv: -kv[1]))
        out.append(f"    {fmt_bytes(r.bytes):>10}  {r.count:>6}  {r.site}" + (f"  [{cats}]" if cats else ""))
    return out


def render_snapshot_figures(figures: SnapshotFigures) -> str:
    lines = [f"{figures.file}"]
    dev = main_device(figures)
    if dev is None:
        lines.append("  no allocations recorded (no trace entries and no segments)")
    else:
        others = len(figures.devices) - 1
        lines += [
            f"  device {dev.device}, {dev.entries} trace entries" + (f" ({others} more devices)" if others else ""),
            f"  peak allocated   {fmt_bytes(dev.peak_allocated)} {_when(dev.peak)}",
            f"  peak reserved    {fmt_bytes(dev.peak_reserved)}",
            f"  at the end       allocated {fmt_bytes(dev.end_allocated)}, reserved {fmt_bytes(dev.end_reserved)}",
            f"  allocated over time (peak {fmt_bytes(dev.peak_allocated)}):",
            f"    |{sparkline([p[2] for p in dev.timeline])}|",
            "  alive at the peak, by site (innermost frame outside torch and the standard library):",
            *_site_rows(dev.sites_at_peak),
            "  still alive at the end (leak candidates; parameters and optimizer state belong here):",
            *_site_rows(dev.alive_at_end),
        ]
        for oom in dev.ooms:
            free = f", {fmt_bytes(oom.device_free)} free on the device" if oom.device_free is not None else ""
            lines.append(f"  OUT OF MEMORY at trace entry {oom.index}: {fmt_bytes(oom.size)} requested{free}")
    seg = figures.segments
    if figures.source == "profiler":
        lines.append("  segments: none (a snapshot made from a torch.profiler run: no allocator segments)")
        return "\n".join(lines)
    lines.append(
        f"  segments: {seg.count}, reserved {fmt_bytes(seg.reserved)}, allocated {fmt_bytes(seg.requested)}, "
        f"free {fmt_bytes((seg.free_external or 0) + (seg.free_internal or 0))} ({fmt_bytes(seg.free_internal)} of it rounding)"
    )
    if seg.per_segment:
        lines.append(f"    {'size':>10}  {'allocated':>10}  {'free':>10}  {'blocks':>6}  stream  type   address")
        for s in seg.per_segment[:ROWS]:
            addr = hex(s.address) if isinstance(s.address, int) else "-"
            lines.append(
                f"    {fmt_bytes(s.total_size):>10}  {fmt_bytes(s.requested):>10}  "
                f"{fmt_bytes(s.free_external + s.free_internal):>10}  {s.blocks:>6}  {s.stream:>6}  "
                f"{s.segment_type or '-':<5}  {addr}"
            )
        if len(seg.per_segment) > ROWS:
            lines.append(f"    ... {len(seg.per_segment) - ROWS} smaller segments")
    return "\n".join(lines)


def _delta_line(label: str, d: Delta) -> str:
    sign = "+" if d.delta is not None and d.delta >= 0 else ""
    return f"  {label:<16} {fmt_bytes(d.base):>10} -> {fmt_bytes(d.new):>10}  ({sign}{fmt_bytes(d.delta)})"


def render_compare(cmp: SnapshotComparison) -> str:
    lines = [f"base: {cmp.base}", f"new:  {cmp.new}"]
    for key, label in (
        ("peak_allocated", "peak allocated"),
        ("peak_reserved", "peak reserved"),
        ("end_allocated", "end allocated"),
        ("end_reserved", "end reserved"),
    ):
        lines.append(_delta_line(label, getattr(cmp, key)))
    for key, title in (("sites_at_peak", "alive at the peak"), ("alive_at_end", "alive at the end")):
        lines.append(f"  {title}, largest changes by site:")
        changes: list[SiteDelta] = getattr(cmp, key)
        if not changes:
            lines.append("    (no change)")
        for r in changes[:ROWS]:
            sign = "+" if r.delta >= 0 else ""
            lines.append(
                f"    {sign + fmt_bytes(r.delta):>11}  {fmt_bytes(r.base):>10} -> {fmt_bytes(r.new):>10}  {r.site}"
            )
    s = cmp.segments
    # a profiler-made snapshot has no allocator segments: its reserved bytes are None, not 0
    counts = {k: "none" if getattr(s.reserved, k) is None else str(getattr(s.count, k)) for k in ("base", "new")}
    if counts["base"] == counts["new"] == "none":
        lines.append("  segments: none in either (made from torch.profiler runs: no allocator segments)")
    else:
        lines.append(
            f"  segments: {counts['base']} -> {counts['new']}, reserved {fmt_bytes(s.reserved.base)} -> "
            f"{fmt_bytes(s.reserved.new)}"
        )
    return "\n".join(lines)


def brief(memory: MemoryEntry) -> str:
    """A few lines per snapshot for ``bridge-plugins summary`` (its ``memory`` entry); the full
    picture is ``bridge-plugins memory FILE``."""
    lines = []
    for f in memory.files or []:
        dev = main_device(f)
        who = f"rank {f.rank}" if f.rank is not None else "snapshot"
        if dev is None:
            lines.append(f"{who} ({f.file}): no allocations recorded")
            continue
        lines += [
            f"{who} ({f.file}):",
            f"  peak allocated {fmt_bytes(dev.peak_allocated)} {_when(dev.peak)}",
            f"  peak reserved {fmt_bytes(dev.peak_reserved)}; at the end {fmt_bytes(dev.end_allocated)} allocated",
        ]
        for title, rows in (
            ("largest at the peak", dev.sites_at_peak[:3]),
            ("alive at the end", dev.alive_at_end[:3]),
        ):
            if rows:
                lines.append(f"  {title}: " + ", ".join(f"{r.site} {fmt_bytes(r.bytes)}" for r in rows))
    return "Memory snapshots (details: bridge-plugins memory FILE)\n" + "\n".join(lines) if lines else ""

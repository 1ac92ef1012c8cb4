"""Report sections from memory snapshots: timeline with the peak, sites at the peak, leak
candidates, segments; and the memory part of a comparison."""

from __future__ import annotations

from html import escape

from bridge_plugins.analysis.memory.results import (
    Delta,
    DeviceFigures,
    MemoryEntry,
    RankSnapshot,
    SiteBytes,
    SnapshotComparison,
    SnapshotFigures,
)
from bridge_plugins.analysis.memory.snapshot import main_device
from bridge_plugins.analysis.report.parts import card, cell, count, fmt_bytes, name_cell, section, table
from bridge_plugins.analysis.report.svg import line_chart, value_hbars

MAX_SNAPSHOTS = 4
CATEGORY_COLOURS = {
    "activation": "#4c78a8",
    "gradient": "#f58518",
    "parameter": "#54a24b",
    "optimizer_state": "#b279a2",
    "input": "#72b7b2",
    "temporary": "#eeca3b",
}


def _when(dev: DeviceFigures) -> str:
    peak = dev.peak
    if peak.index < 0:
        return "before the first recorded event"
    at = f"{peak.time_s:.3f} s into the trace" if peak.time_s is not None else f"event {peak.index} of {dev.entries}"
    return at + (f", allocating {fmt_bytes(peak.size)} at {peak.site}" if peak.site else "")


def _timeline(dev: DeviceFigures, idx: int) -> str:
    points = dev.timeline
    timed = all(p[1] is not None for p in points[1:]) and len(points) > 1
    xs = [p[1] if timed else p[0] + 1 for p in points]  # untimed: events counted from 1, 0 = the start
    if timed:
        xs[0] = 0.0
    series = [("allocated", "#4c78a8", [p[2] for p in points])]
    if any(p[3] is not None for p in points):
        series.append(("reserved", "#bab0ac", [p[3] for p in points]))
    peak_point = max(points, key=lambda p: p[2])
    x_peak = peak_point[1] if timed else peak_point[0] + 1
    marker = (x_peak if x_peak is not None else 0.0, peak_point[2], f"peak {fmt_bytes(dev.peak_allocated)}")
    return line_chart(
        f"chart-memory-timeline-{idx}",
        "Memory over time",
        xs,
        series,
        fmt_bytes,
        "seconds since the first recorded event" if timed else "allocator events",
        marker,
    )


def _dominant_colour(categories: dict[str, int]) -> str:
    if not categories:
        return "#4c78a8"
    return CATEGORY_COLOURS.get(max(categories, key=lambda c: categories[c]), "#9d755d")


def _sites_chart(dev: DeviceFigures, idx: int) -> str:
    rows = [
        {
            "label": r.site,
            "value": r.bytes,
            "colour": _dominant_colour(r.categories),
            "data": {"site": r.site, "bytes": r.bytes, "count": r.count},
        }
        for r in dev.sites_at_peak
    ]
    cats = sorted({c for r in dev.sites_at_peak for c in r.categories})
    note = (
        (
            "Colour: the largest tensor category at that site ("
            + ", ".join(f'<span style="color:{CATEGORY_COLOURS.get(c, "#9d755d")}">■</span> {escape(c)}' for c in cats)
            + ")"
        )
        if cats
        else ""
    )
    return value_hbars(
        f"chart-memory-sites-{idx}",
        "Alive at the peak, by site (innermost frame in your code)",
        rows,
        fmt_bytes,
        note=note,
    )


def _site_table(table_id: str, rows: list[SiteBytes]) -> str:
    body = [
        name_cell(r.site, 90)
        + cell(r.bytes, fmt_bytes)
        + f'<td class="num">{r.count}</td>'
        + f"<td>{escape(', '.join(f'{k} {fmt_bytes(v)}' for k, v in r.categories.items()))}</td>"
        for r in rows
    ]
    return table(table_id, ["site", "bytes", "allocations", "categories"], body, "figures")


def _segments(figures: SnapshotFigures, idx: int) -> str:
    seg = figures.segments
    if figures.source == "profiler":
        return '<p class="note">Made from a torch.profiler run: no allocator segments, no reserved memory.</p>'
    rows = [
        cell(s.total_size, fmt_bytes)
        + cell(s.requested, fmt_bytes)
        + cell(s.free_external + s.free_internal, fmt_bytes)
        + f'<td class="num">{s.blocks}</td>'
        + f'<td class="num">{s.stream}</td><td>{escape(str(s.segment_type or "–"))}</td>'
        for s in seg.per_segment[:10]
    ]
    head = (
        f"<p>{count(seg.count, 'segment')}: reserved {fmt_bytes(seg.reserved)}, allocated {fmt_bytes(seg.requested)}, "
        f"free {fmt_bytes((seg.free_external or 0) + (seg.free_internal or 0))} ({fmt_bytes(seg.free_internal)} of it rounding).</p>"
    )
    return head + table(
        f"table-segments-{idx}", ["size", "allocated", "free", "blocks", "stream", "type"], rows, "figures"
    )


def _snapshot_block(figures: RankSnapshot, idx: int) -> str:
    dev = main_device(figures)
    rank = f"rank {figures.rank}" if figures.rank is not None else "snapshot"
    title = f'<h3>{escape(rank)} <span class="file">{escape(figures.file)}</span></h3>'
    if dev is None:
        return title + '<p class="note">No allocations recorded.</p>'
    cards = (
        card("peak allocated", fmt_bytes(dev.peak_allocated), _when(dev), dev.peak_allocated, "peak-allocated")
        + card(
            "peak reserved",
            fmt_bytes(dev.peak_reserved),
            "cudaMalloc'd by the caching allocator"
            if dev.peak_reserved is not None
            else "not recorded: made from a torch.profiler run",
            dev.peak_reserved,
            "peak-reserved",
        )
        + card(
            "at the end",
            fmt_bytes(dev.end_allocated),
            f"reserved {fmt_bytes(dev.end_reserved)}",
            dev.end_allocated,
            "end-allocated",
        )
    )
    ooms = "".join(
        f'<p class="alert">Out of memory at event {o.index}: {fmt_bytes(o.size)} requested.</p>' for o in dev.ooms
    )
    return (
        f'<div class="snapshot" id="memory-{idx}" data-file="{escape(figures.file, quote=True)}">{title}'
        f'<div class="cards">{cards}</div>{ooms}{_timeline(dev, idx)}{_sites_chart(dev, idx)}'
        f"<h4>Still alive at the end: leak candidates (parameters and optimizer state belong here)</h4>"
        f"{_site_table(f'table-memory-end-{idx}', dev.alive_at_end)}<h4>Allocator segments at the end</h4>"
        f"{_segments(figures, idx)}</div>"
    )


def memory_section(memory: MemoryEntry | None) -> str:
    files = memory.files if memory else []
    if not files:
        return section(
            "memory",
            "Memory",
            '<p class="note">No CUDA memory snapshots here (record_memory_history=True writes them).</p>',
        )
    ordered = sorted(files, key=lambda f: (f.rank is None, f.rank or 0, f.file))
    more = len(ordered) - MAX_SNAPSHOTS
    body = "".join(_snapshot_block(f, i) for i, f in enumerate(ordered[:MAX_SNAPSHOTS]))
    body += f'<p class="note">{more} more snapshots: bridge-plugins memory FILE shows each.</p>' if more > 0 else ""
    intro = (
        "Bytes requested by tensors, replayed from the allocator's trace (alloc to free). Sites are the "
        "innermost Python frame outside PyTorch and the standard library."
    )
    return section("memory", "Memory", body, intro)


def memory_compare_block(cmp: SnapshotComparison) -> str:
    rows = []
    for key, label in (
        ("peak_allocated", "peak allocated"),
        ("peak_reserved", "peak reserved"),
        ("end_allocated", "end allocated"),
    ):
        d: Delta = getattr(cmp, key)
        rows.append(f"<td>{label}</td>" + cell(d.base, fmt_bytes) + cell(d.new, fmt_bytes) + cell(d.delta, fmt_bytes))
    sites = [
        name_cell(r.site, 90) + cell(r.base, fmt_bytes) + cell(r.new, fmt_bytes) + cell(r.delta, fmt_bytes)
        for r in cmp.sites_at_peak
    ]
    return (
        "<h3>Memory</h3>"
        + table("table-compare-memory", ["", "baseline", "this run", "change"], rows, "figures")
        + "<h4>Alive at the peak: largest changes by site</h4>"
        + table("table-compare-memory-sites", ["site", "baseline", "this run", "change"], sites, "figures")
    )
